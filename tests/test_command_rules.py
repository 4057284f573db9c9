"""The run tool's command rules: the shell split, pattern matching, the verdict, and the
gate that asks (in process, with a host that answers as the user would)."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import pytest

from seri_lsp.agent.command_gate import (
    ALLOW_ONCE,
    DENY,
    IGNORE_WORKSPACE_RULES,
    USE_WORKSPACE_RULES,
    CommandGate,
    WorkspaceAgreements,
    allow_for_session,
)
from seri_lsp.agent.tools import Denied
from seri_lsp.command_rules import (
    CommandRules,
    Pattern,
    decide,
    split_line,
    suggested_pattern,
)
from seri_lsp.host import Answer, Host, Question
from seri_lsp.settings import load_settings


def words(line: str) -> list[tuple[str, ...]]:
    split = split_line(line)
    assert split.error is None, split.error
    return [part.words for part in split.parts]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("npm test", [("npm", "test")]),
        ("npm test; rm -rf /", [("npm", "test"), ("rm", "-rf", "/")]),
        ("a && b || c | d & e", [("a",), ("b",), ("c",), ("d",), ("e",)]),
        ("echo $(git push origin)", [("echo", "$(git push origin)"), ("git", "push", "origin")]),
        ("(cd x && git push)", [("cd", "x"), ("git", "push")]),
        ("{ git push; }", [("git", "push")]),
        ("FOO=1 git push", [("git", "push")]),
        ("npm test > out.txt 2>&1", [("npm", "test")]),
        ("cat < $(git push)", [("cat",), ("git", "push")]),
        ("FOO=$(git push) npm test", [("npm", "test"), ("git", "push")]),
        ('echo "git push"', [("echo", "git push")]),
        ("echo 'a b' c", [("echo", "a b", "c")]),
        ("diff <(git show a) b", [("diff", "<(git show a)", "b"), ("git", "show", "a")]),
        ("for i in 1 2; do git push; done", [("git", "push")]),
        ("if true; then git push; fi", [("true",), ("git", "push")]),
        ("echo `git push`", [("echo", "`git push`"), ("git", "push")]),
    ],
)
def test_a_line_splits_into_its_simple_commands(line: str, expected: list[tuple[str, ...]]) -> None:
    assert words(line) == expected


@pytest.mark.parametrize(
    "line", ["echo 'unterminated", "echo $((1 + 2))", "[[ -f x ]] && git push", "a &&"]
)
def test_what_the_parser_cannot_read_is_an_error_not_a_guess(line: str) -> None:
    assert split_line(line).error is not None


@pytest.mark.parametrize(
    ("pattern", "command", "matches"),
    [
        ("npm run *", "npm run build", True),
        ("npm run *", "npm run test -- -x", True),
        ("npm run *", "npm run", True),
        ("npm run *", "npm test", False),
        ("npm test", "npm test", True),
        ("npm test", "npm test --watch", False),
        ("npm test", "npm", False),
        ("git push *", "git push origin main", True),
        ("git log*", "git logs", True),  # (a glob within one word)
        ("git log*", "git log --oneline", False),  # (and only that word)
        ("pytest tests/*.py", "pytest tests/test_a.py", True),
        ('git commit -m "a b"', "git commit -m 'a b'", True),
    ],
)
def test_patterns_match_word_for_word(pattern: str, command: str, matches: bool) -> None:
    parsed = Pattern.parse(pattern)
    assert parsed is not None
    assert parsed.matches(words(command)[0]) is matches


RULES = CommandRules(allow=("npm test", "npm run *", "echo *", "cd *"), deny=("git push *",))


@pytest.mark.parametrize(
    ("line", "decision"),
    [
        ("npm test", "allow"),
        ("npm run build && npm test", "allow"),
        ("npm test > out.txt", "allow"),
        ("FOO=1 npm test", "allow"),
        ("npm test; rm -rf /", "ask"),
        ("npm test --watch", "ask"),
        ("git push origin", "deny"),
        ("echo $(git push origin)", "deny"),
        ("echo `git push`", "deny"),
        ("`git push`", "deny"),
        ("(cd x && git push)", "deny"),
        ("FOO=1 git push", "deny"),
        ("env FOO=1 git push", "deny"),
        ("npm test | sudo git push -f", "deny"),
        ('echo "git push"', "allow"),  # (an argument, not a command)
        ("echo 'unterminated", "ask"),
        ("eval npm test", "ask"),
        ("sh -c 'npm test'", "ask"),
        ("$CMD test", "ask"),
        ("f() { npm test; }; f", "ask"),
        ("FOO=1", "ask"),
        ("/usr/bin/git push", "deny"),
        ("command /usr/bin/git push -f", "deny"),
        ("\\git push", "deny"),
        ('g"i"t push', "deny"),
        ("echo a\ngit push", "deny"),
        ("echo > $(git push)", "deny"),
        ("bash <<EOF\ngit push\nEOF", "ask"),
    ],
)
def test_the_verdict_on_a_line(line: str, decision: str) -> None:
    assert decide(line, RULES).decision == decision


def test_a_deny_names_the_rule_and_the_part() -> None:
    verdict = decide("npm test && git push origin", RULES)
    assert verdict.rule == "git push *"
    assert verdict.part is not None and verdict.part.text == "git push origin"


def test_the_parser_is_imported_only_when_a_line_is_judged() -> None:
    import subprocess
    import sys

    code = (
        "import seri_lsp.agent.command_gate, seri_lsp.settings, sys; "
        "print('bashlex' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_settings_read_the_rules_and_report_bad_entries(tmp_path: Path) -> None:
    options = {"permissions": {"commands": {"allow": ["npm test", 'x "'], "deny": "git"}}}
    settings, problems = load_settings(tmp_path, options, env={})
    assert settings.command_rules == CommandRules(allow=("npm test",))
    assert len(problems) == 2 and "permissions.commands.deny" in problems[1]


# --- the gate ---------------------------------------------------------------------------


class Answering(Host):
    """A host whose user answers the questions from `answers` (None: nobody answers)."""

    def __init__(self, *answers: str | None) -> None:
        self.answers: deque[str | None] = deque(answers)
        self.questions: list[Question] = []

    async def approve(self, question: Question) -> Answer:
        self.questions.append(question)
        return Answer(self.answers.popleft() if self.answers else None)


async def test_a_line_the_rules_allow_runs_without_asking() -> None:
    host = Answering()
    await CommandGate("ask", host, "s", RULES).check("npm run build && npm test", ".")
    assert host.questions == []


async def test_a_deny_rule_refuses_even_under_allow() -> None:
    host = Answering()
    with pytest.raises(Denied, match="git push \\*"):
        await CommandGate("allow", host, "s", RULES).check("npm test; git push", ".")
    await CommandGate("allow", host, "s", RULES).check("rm -rf build", ".")
    assert host.questions == []
    # What deny rules cannot look at whole is asked about, under allow too.
    host = Answering(ALLOW_ONCE, ALLOW_ONCE)
    await CommandGate("allow", host, "s", RULES).check('eval "$X"', ".")
    await CommandGate("allow", host, "s", RULES).check("echo 'unterminated", ".")
    assert len(host.questions) == 2
    await CommandGate("allow", host, "s", CommandRules()).check('eval "$X"', ".")
    with pytest.raises(Denied, match=r"permissions\.run is 'deny'"):
        await CommandGate("deny", host, "s", RULES).check("npm test", ".")


async def test_the_card_offers_a_session_pattern_that_later_commands_use() -> None:
    host = Answering(allow_for_session(("make check *",)))
    gate = CommandGate("ask", host, "s", RULES)
    await gate.check("npm test && make check all", "sub")
    [question] = host.questions
    assert question.kind == "command"
    assert question.choices == (ALLOW_ONCE, "Allow `make check *` for this session", DENY)
    assert question.details["command"] == "npm test && make check all"
    assert question.details["cwd"] == "sub"
    assert question.details["parts"] == ["npm test", "make check all"]
    assert question.details["patterns"] == ["make check *"]
    await gate.check("make check fast", ".")  # the session's rule: no question
    assert len(host.questions) == 1
    await CommandGate("ask", Answering(ALLOW_ONCE), "s", RULES).check("make check fast", ".")


async def test_an_unparseable_line_offers_only_once_or_deny() -> None:
    host = Answering(DENY)
    with pytest.raises(Denied, match="the user denied"):
        await CommandGate("ask", host, "s", RULES).check("echo 'unterminated", ".")
    assert host.questions[0].choices == (ALLOW_ONCE, DENY)
    assert "cannot be parsed" in host.questions[0].details["reason"]


async def test_no_answer_refuses() -> None:
    with pytest.raises(Denied, match="did not answer"):
        await CommandGate("ask", Answering(None), "s", RULES).check("make", ".")


async def test_workspace_allow_rules_apply_only_once_agreed(tmp_path: Path) -> None:
    rules = CommandRules(workspace_allow=("make *",), deny=("make deploy",))
    agreements = WorkspaceAgreements(tmp_path)
    host = Answering(IGNORE_WORKSPACE_RULES, ALLOW_ONCE)
    gate = CommandGate("ask", host, "s", rules, agreements, "/proj")
    await gate.check("make all", ".")
    assert [q.choices[0] for q in host.questions] == [USE_WORKSPACE_RULES, ALLOW_ONCE]
    assert "`make *`" in host.questions[0].message

    host = Answering(USE_WORKSPACE_RULES)
    gate = CommandGate("ask", host, "s", rules, agreements, "/proj")
    await gate.check("make all", ".")
    await gate.check("make test", ".")
    assert len(host.questions) == 1
    assert json.loads((tmp_path / "command-rules.json").read_text()) == {"/proj": ["make *"]}
    with pytest.raises(Denied):
        await gate.check("make deploy", ".")

    host = Answering()  # a later session of the same project: agreed already
    await CommandGate("ask", host, "s", rules, agreements, "/proj").check("make x", ".")
    assert host.questions == []
    changed = CommandRules(workspace_allow=("make *", "rm *"))
    host = Answering(IGNORE_WORKSPACE_RULES, ALLOW_ONCE)
    await CommandGate("ask", host, "s", changed, agreements, "/proj").check("make x", ".")
    assert host.questions[0].choices[0] == USE_WORKSPACE_RULES  # changed rules: asked again


def test_the_choices_read_right_as_acp_permission_options() -> None:
    from seri_lsp.acp.host import option_kind

    card = [ALLOW_ONCE, allow_for_session(("npm run *",)), DENY]
    assert [option_kind(c, card) for c in card] == ["allow_once", "allow_always", "reject_once"]
    workspace = [USE_WORKSPACE_RULES, IGNORE_WORKSPACE_RULES]
    assert [option_kind(c, workspace) for c in workspace] == ["allow_once", "reject_once"]


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("npm run build", "npm run *"),
        ("git status --short", "git status *"),
        ("rails db:migrate now", "rails db:migrate *"),
        ("seq 1 200000", "seq 1 200000"),
        ("python -m pytest -q", "python -m pytest -q"),
        ("cat notes.txt other.txt", "cat notes.txt other.txt"),
        ("make", "make"),
    ],
)
def test_the_offered_pattern_widens_only_a_subcommand(line: str, pattern: str) -> None:
    [part] = split_line(line).parts
    assert suggested_pattern(part) == pattern


async def test_the_question_names_the_root_in_words() -> None:
    host = Answering(ALLOW_ONCE, ALLOW_ONCE)
    await CommandGate("ask", host, "s").check("make", ".")
    await CommandGate("ask", host, "s").check("make", "web")
    assert [q.message for q in host.questions] == [
        "seri wants to run `make` in the workspace root.",
        "seri wants to run `make` in web.",
    ]
