"""The recap: parsing the summariser's reply, rendering the recap text, storing it.

SPEC section 4: four sections, Goal, Progress, Blockers and Next steps, headed `Goal:` or
with markdown headings; a reply without all four is unusable. Paths come from the tool
calls, never from the model, and are rendered as `Read:` and `Modified:` lines.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from seri_lsp.context.recap import Recap, UnusableSummary, merge_paths, parse_summary

PLAIN_REPLY = """Goal:
Fix the failing login test.

Progress:
Found the bug in auth.py.

Blockers:
None.

Next steps:
Run the test suite.
"""


def recap(**overrides: object) -> Recap:
    fields: dict[str, object] = {
        "goal": "Fix login",
        "progress": "Found the bug",
        "blockers": "None",
        "next_steps": "Run tests",
    }
    fields.update(overrides)
    return Recap(**fields)  # type: ignore[arg-type]


# --- parse_summary ----------------------------------------------------------------------


def test_plain_colon_headings_give_the_four_fields() -> None:
    assert parse_summary(PLAIN_REPLY) == {
        "goal": "Fix the failing login test.",
        "progress": "Found the bug in auth.py.",
        "blockers": "None.",
        "next_steps": "Run the test suite.",
    }


def test_markdown_hash_headings_are_accepted() -> None:
    reply = "## Goal\ng\n## Progress\np\n## Blockers\nb\n### Next Steps\nn\n"
    assert parse_summary(reply) == {
        "goal": "g",
        "progress": "p",
        "blockers": "b",
        "next_steps": "n",
    }


def test_bold_headings_are_accepted() -> None:
    reply = "**Goal:**\ng\n**Progress:**\np\n**Blockers**\nb\n**Next steps:**\nn\n"
    assert parse_summary(reply) == {
        "goal": "g",
        "progress": "p",
        "blockers": "b",
        "next_steps": "n",
    }


@pytest.mark.parametrize(
    "reply",
    [
        "### 1. Goal\ng\n### 2. Progress\np\n### 3. Blockers\nb\n### 4. Next steps\nn\n",
        "- **Goal**: g\n- **Progress**: p\n- **Blockers**: b\n- **Next steps**: n\n",
        "1) Goal: g\n2) Progress: p\n3) Blockers: b\n4) Next steps: n\n",
        "* Goal: g\n* Progress: p\n* Blockers: b\n* Next steps: n\n- **Read:** x.py\n",
    ],
    ids=["numbered hash headings", "bold list items", "numbered lines", "starred list"],
)
def test_headings_written_as_list_items_or_numbered_are_accepted(reply: str) -> None:
    assert parse_summary(reply) == {
        "goal": "g",
        "progress": "p",
        "blockers": "b",
        "next_steps": "n",
    }


def test_content_on_the_same_line_as_the_heading_belongs_to_its_section() -> None:
    reply = "Goal: ship it\n**Progress:** half done\n## Blockers: none\nNext steps: test it\n"
    assert parse_summary(reply) == {
        "goal": "ship it",
        "progress": "half done",
        "blockers": "none",
        "next_steps": "test it",
    }


def test_a_section_keeps_all_its_lines_up_to_the_next_heading() -> None:
    reply = (
        "Goal: refactor\n"
        "Progress:\n- moved parser\n- added tests\n\n  indented note\n"
        "Blockers: none\n"
        "Next steps:\n1. review\n2. merge\n"
    )
    fields = parse_summary(reply)
    assert fields["progress"] == "- moved parser\n- added tests\n\n  indented note"
    assert fields["next_steps"] == "1. review\n2. merge"


def test_a_heading_line_with_the_same_line_content_keeps_the_following_lines_too() -> None:
    reply = "Goal: first line\nsecond line\nProgress: p\nBlockers: b\nNext steps: n\n"
    assert parse_summary(reply)["goal"] == "first line\nsecond line"


def test_headings_are_case_insensitive_and_accept_next_steps_spellings() -> None:
    reply = "GOAL: g\nprogress: p\nBlockers: b\nnext_steps: n\n"
    assert parse_summary(reply)["next_steps"] == "n"
    assert parse_summary(reply.replace("next_steps", "Next-Steps"))["next_steps"] == "n"


def test_a_word_that_only_starts_like_a_heading_is_content() -> None:
    reply = "Goal: g\nProgress:\nGoals reached so far: two\nBlockers: b\nNext steps: n\n"
    assert parse_summary(reply)["progress"] == "Goals reached so far: two"


def test_text_before_the_first_heading_is_ignored() -> None:
    reply = "Here is the recap you asked for.\n\n" + PLAIN_REPLY
    assert parse_summary(reply)["goal"] == "Fix the failing login test."


def test_a_reply_missing_a_section_is_unusable() -> None:
    with pytest.raises(UnusableSummary):
        parse_summary("Goal: g\nProgress: p\nNext steps: n\n")


def test_an_unusable_reply_names_every_missing_section() -> None:
    with pytest.raises(UnusableSummary) as raised:
        parse_summary("Goal: g\nProgress: p\n")
    message = str(raised.value)
    assert "Blockers:" in message
    assert "Next steps:" in message
    assert "Goal:" not in message
    assert "Progress:" not in message


def test_an_empty_reply_is_unusable_and_names_all_four_sections() -> None:
    with pytest.raises(UnusableSummary) as raised:
        parse_summary("")
    for heading in ("Goal:", "Progress:", "Blockers:", "Next steps:"):
        assert heading in str(raised.value)


def test_a_heading_word_without_colon_or_markup_does_not_count_as_a_section() -> None:
    with pytest.raises(UnusableSummary, match="Blockers:"):
        parse_summary("Goal: g\nProgress: p\nBlockers\nNext steps: n\n")


def test_read_and_modified_lines_written_by_the_model_are_dropped() -> None:
    reply = PLAIN_REPLY + "Read: invented.py, other.py\nmodified : made_up.py\n"
    assert parse_summary(reply)["next_steps"] == "Run the test suite."


def test_read_and_modified_lines_in_markdown_dress_are_dropped() -> None:
    reply = PLAIN_REPLY + "**Read:** invented.py\n## Modified: made_up.py\n__Modified__: x.py\n"
    assert parse_summary(reply)["next_steps"] == "Run the test suite."


def test_a_line_that_merely_starts_with_the_word_read_is_kept() -> None:
    reply = PLAIN_REPLY + "Read the changelog before merging.\n"
    assert parse_summary(reply)["next_steps"] == (
        "Run the test suite.\nRead the changelog before merging."
    )


# --- Recap.render -----------------------------------------------------------------------


def test_render_carries_the_four_fields_under_their_headings_in_order() -> None:
    text = recap().render()
    positions = [
        text.index("Goal:\nFix login"),
        text.index("Progress:\nFound the bug"),
        text.index("Blockers:\nNone"),
        text.index("Next steps:\nRun tests"),
    ]
    assert positions == sorted(positions)


def test_render_writes_read_and_modified_lines_comma_separated() -> None:
    lines = recap(read=("a", "b"), modified=("c",)).render().splitlines()
    assert "Read: a, b" in lines
    assert "Modified: c" in lines


def test_render_omits_the_read_line_when_nothing_was_read() -> None:
    text = recap(modified=("c",)).render()
    assert "Read:" not in text
    assert "Modified: c" in text.splitlines()


def test_render_omits_the_modified_line_when_nothing_was_modified() -> None:
    text = recap(read=("a",)).render()
    assert "Modified:" not in text
    assert "Read: a" in text.splitlines()


def test_render_omits_both_path_lines_when_there_are_no_paths() -> None:
    text = recap().render()
    assert "Read:" not in text
    assert "Modified:" not in text


def test_render_marks_an_empty_field_as_none() -> None:
    assert "Blockers:\n(none)" in recap(blockers="  ").render()


def test_a_rendered_recap_parses_back_to_its_four_fields() -> None:
    original = recap(progress="line one\nline two", read=("a",), modified=("b",))
    assert parse_summary(original.render()) == {
        "goal": original.goal,
        "progress": original.progress,
        "blockers": original.blockers,
        "next_steps": original.next_steps,
    }


# --- stored form ------------------------------------------------------------------------


def test_to_json_uses_the_wire_field_names() -> None:
    data = recap(read=("a",), modified=("b",), evicted=7).to_json()
    assert data == {
        "goal": "Fix login",
        "progress": "Found the bug",
        "blockers": "None",
        "nextSteps": "Run tests",
        "read": ["a"],
        "modified": ["b"],
        "evicted": 7,
        "toolCalls": 0,
        "tokensBefore": None,
        "tokensAfter": None,
    }


def test_to_json_and_from_json_round_trip() -> None:
    original = recap(read=("a", "é/ü.py"), modified=("c",), evicted=12)
    assert Recap.from_json(original.to_json()) == original
    counted = replace(original, tool_calls=3, tokens_before=2100, tokens_after=400)
    assert Recap.from_json(counted.to_json()) == counted


def test_from_json_fills_absent_fields_with_empty_values() -> None:
    assert Recap.from_json({"goal": "g"}) == Recap(
        goal="g", progress="", blockers="", next_steps=""
    )


# --- merge_paths ------------------------------------------------------------------------


def test_merge_lists_a_path_both_read_and_modified_under_modified_only() -> None:
    read, modified = merge_paths(["a", "b"], [], ["c"], ["b"])
    assert read == ("a", "c")
    assert modified == ("b",)


def test_merge_moves_a_path_read_earlier_and_modified_now_to_modified() -> None:
    read, modified = merge_paths(["a"], [], [], ["a"])
    assert read == ()
    assert modified == ("a",)


def test_merge_keeps_a_path_modified_earlier_as_modified_when_read_now() -> None:
    read, modified = merge_paths([], ["a"], ["a"], [])
    assert read == ()
    assert modified == ("a",)


def test_merge_keeps_first_seen_order_without_duplicates() -> None:
    read, modified = merge_paths(["z", "a"], ["m", "k"], ["a", "y", "z"], ["k", "b", "m"])
    assert read == ("z", "a", "y")
    assert modified == ("m", "k", "b")
