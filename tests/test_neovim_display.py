"""What the Neovim chat puts on the screen, read back from real Neovim's screen.

The chat renders the model's markdown (a code span's marks hidden, bold as bold), but
what seri asks to approve, its tool rows and paths, failures and recaps are shown as
they are written: concealing there would show text other than what runs. The role
headings (`## You`, `## seri`) are drawn apart from the headings of a reply.
"""

from __future__ import annotations

from pathlib import Path

from tests.scripted_provider import Calls, Error, ScriptedProvider, Text
from tests.test_neovim import nvim, scenario  # noqa: F401 (fixtures)

SUMMARY = "Goal: answer\nProgress: asked three times\nBlockers: none\nNext steps: answer"
CODE = 'slug = re.sub(r"[^a-z0-9]+", "-", post["tags"][0])'


def test_code_paths_failures_and_recaps_are_shown_as_written_and_prose_is_rendered(
    scenario,  # noqa: F811
    provider: ScriptedProvider,
    workspace: Path,
) -> None:
    (workspace / "app.py").write_text("slug = None\n")
    (workspace / "src" / "[id]").mkdir(parents=True)
    (workspace / "src" / "[id]" / "page.tsx").write_text('const tag = post["tags"][0];\n')
    failure = Error(500, {"error": {"message": 'bad value post["tags"][0]'}})
    provider.script(
        Calls([("e1", "edit", {"path": "app.py", "old_text": "slug = None", "new_text": CODE})]),
        Text(
            '## Plan\n\nNow `post["tags"][0]` is **slugged**.\n\n'
            "See [the docs](https://docs.python.org/3/library/re.html)."
        ),
        Calls(
            [
                ("g1", "grep", {"pattern": "[^a-z0-9]+", "path": "src/[id]"}),
                ("r1", "read_file", {"path": "src/[id]/page.tsx"}),
            ]
        ),
        Text("It is read in src/[id]/page.tsx."),
        failure,
        failure,
        Text(
            'Goal: slugify post["tags"][0]\n'
            "Progress: app.py slugs the first tag\n"
            "Blockers: none\n"
            'Next steps: test re.sub(r"[^a-z0-9]+", "-", s)'
        ),
        Calls([("r2", "read_file", {"path": "app.py"})]),
    )
    scenario("display.lua")


def test_notices_of_compacted_tasks_are_not_drawn_again_under_a_new_reply(
    scenario,  # noqa: F811
    provider: ScriptedProvider,
) -> None:
    failure = Error(500, {"error": {"message": "upstream trouble"}})
    provider.script(
        Text("A first answer. " + "Words to give the history some weight. " * 20),
        failure,
        failure,
        Text("The answer starts, then the stream stalls.", chunk_size=10, stall_after=1),
        Text(SUMMARY),
        Text("All good now."),
    )
    scenario("compacted_notices.lua")
