"""Rule front matter and globs: YAML read by a YAML parser, globs with the whole syntax
(braces, classes, `**`) matched by wcmatch, a malformed header refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from seri_lsp.context.prompt_files import FrontMatterError, GlobRule, freeze, parse_front_matter


def rule(globs: str) -> GlobRule:
    found, body = parse_front_matter(f"---\nglobs: {globs}\n---\nThe rule.\n")
    assert body.strip() == "The rule."
    return GlobRule("r.md", found, body)


@pytest.mark.parametrize(
    ("globs", "path", "matches"),
    [
        ('"**/*.{ts,tsx}"', "web/src/app.tsx", True),
        ('"**/*.{ts,tsx}"', "app.ts", True),
        ('"**/*.{ts,tsx}"', "app.js", False),
        ('"src/*.[ch]"', "src/main.c", True),
        ('"src/*.[ch]"', "src/main.h", True),
        ('"src/*.[ch]"', "src/main.o", False),
        ('"src/*.[ch]"', "src/lib/main.c", False),  # * stays within one folder
        ('"src/**/*.py"', "src/a/b/c.py", True),
        ('"*.py"', "deep/down/x.py", True),  # no slash: the file name, anywhere
        ('"/setup.py"', "setup.py", True),  # a leading slash anchors at the root
        ('"/setup.py"', "pkg/setup.py", False),
        ('"*.py, tests/**"', "tests/data/x.json", True),  # a comma list, as before
        ('"*.{js,mjs}, docs/*.md"', "a/b.mjs", True),  # a comma in braces is the glob's
        ('"*.{js,mjs}, docs/*.md"', "docs/index.md", True),
        ('["*.rs", "Cargo.toml"]', "crates/x/Cargo.toml", True),  # a flow list
        ("\n  - '*.go'\n  - go.mod", "cmd/main.go", True),  # a block list
        ("\n  - '*.go'\n  - go.mod", "main.rs", False),
    ],
)
def test_globs_have_the_whole_syntax(globs: str, path: str, matches: bool) -> None:
    assert rule(globs).matches(path) is matches


def test_other_front_matter_keys_and_no_globs_make_an_always_on_rule() -> None:
    text = "---\ndescription: Style\nalwaysApply: true\n---\nBe brief.\n"
    assert parse_front_matter(text) == ((), "Be brief.")
    assert parse_front_matter("No front matter.\n") == ((), "No front matter.\n")


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ("globs: *.py", "not valid YAML (line 2)"),  # an unquoted * is a YAML alias
        ("globs: [unclosed", "not valid YAML"),
        ("- just\n- a list", "must be YAML keys and values"),
        ("globs: 42", "must be a string or a list of strings, got int"),
        ("globs: ['{1..5000}']", "cannot be used"),
    ],
)
def test_a_malformed_header_is_refused_with_the_reason(header: str, why: str) -> None:
    with pytest.raises(FrontMatterError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_front_matter(f"---\n{header}\n---\nBody.\n")


def test_a_rule_with_a_malformed_header_is_skipped_with_a_warning_naming_it(
    tmp_path: Path,
) -> None:
    rules = tmp_path / "workspace" / ".seri" / "rules"
    rules.mkdir(parents=True)
    (rules / "broken.md").write_text("---\nglobs: *.py\n---\nNever sent.\n")
    (rules / "fine.md").write_text('---\nglobs: "*.{ts,tsx}"\n---\nTypes.\n')
    frozen = freeze(tmp_path / "workspace", tmp_path / "profile")
    assert [r.path for r in frozen.glob_rules] == [str(rules / "fine.md")]
    assert "Never sent." not in frozen.system
    [warning] = frozen.warnings
    assert warning.startswith(f"Skipped {rules / 'broken.md'}: its front matter is not valid YAML")
    assert str(rules / "broken.md") not in frozen.hashes()
