"""Applying a code block from a reply to a file (`seri.code.merge`, Apply to File): a
block that shows one changed unit goes in its place and the rest of the file stays.

The rules run on real files in a temporary folder (`merge_into`, as the server calls
it); the command itself through the real server with pytest-lsp.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seri_lsp.agent.code_merge import CodeMerge, LineSpan, merge, merge_into
from tests.harness import command, open_document
from tests.session_helpers import invalid, refused

SLUG_PY = """import re


def title(post):
    return post["title"].strip()


def slugify(text):
    text = text.lower()
    return re.sub(r"[^a-z0-9]+", "-", text)


def tags(post):
    return post["tags"][0]


if __name__ == "__main__":
    print(slugify("Hello World"))
"""

FIXED_SLUGIFY = """def slugify(text, sep="-"):
    text = text.lower().strip()
    return re.sub(r"[^a-z0-9]+", sep, text).strip(sep)
"""


def _apply(tmp_path: Path, name: str, current: str | None, block: str) -> CodeMerge:
    path = tmp_path / name
    if current is not None:
        path.write_bytes(current.encode())
    return merge_into(path, name, None, block)


def test_a_python_function_is_replaced_in_the_middle_and_the_rest_of_the_file_stays(
    tmp_path: Path,
) -> None:
    result = _apply(tmp_path, "slug.py", SLUG_PY, FIXED_SLUGIFY)

    assert (result.mode, result.range) == ("fragment", LineSpan(8, 10))
    old = SLUG_PY.split("\n")[7:10]
    assert result.text == SLUG_PY.replace("\n".join(old) + "\n", FIXED_SLUGIFY)
    assert old[0] == "def slugify(text):" and old[2].startswith("    return re.sub(")


def test_a_method_shown_at_column_zero_goes_in_at_its_class_indentation(tmp_path: Path) -> None:
    current = (
        "class Post:\n"
        "    @property\n"
        "    def slug(self):\n"
        "        return self.title\n"
        "\n"
        "    def tags(self):\n"
        "        return []\n"
    )
    block = "@property\ndef slug(self):\n    return slugify(self.title)\n"

    result = _apply(tmp_path, "post.py", current, block)

    assert (result.mode, result.range) == ("fragment", LineSpan(2, 4))
    assert result.text == current.replace("return self.title", "return slugify(self.title)")


def test_a_javascript_function_is_replaced_up_to_its_closing_brace(tmp_path: Path) -> None:
    current = (
        "const SEP = '-';\n"
        "\n"
        "function slugify(s) {\n"
        "  if (!s) {\n"
        "    return '';\n"
        "  }\n"
        "  return s.toLowerCase();\n"
        "}\n"
        "\n"
        "function tags(post) {\n"
        "  return post.tags;\n"
        "}\n"
    )
    block = "function slugify(s) {\n  return (s || '').toLowerCase().split(' ').join(SEP);\n}\n"

    result = _apply(tmp_path, "slug.js", current, block)

    assert (result.mode, result.range) == ("fragment", LineSpan(3, 8))
    assert result.text == (
        "const SEP = '-';\n\n" + block + "\nfunction tags(post) {\n  return post.tags;\n}\n"
    )


def test_a_lua_function_is_replaced_up_to_its_end(tmp_path: Path) -> None:
    current = (
        "local M = {}\n"
        "\n"
        "function M.slugify(s)\n"
        "  if s == nil then\n"
        '    return ""\n'
        "  end\n"
        "  return s:lower()\n"
        "end\n"
        "\n"
        "return M\n"
    )
    block = 'function M.slugify(s)\n  return (s or ""):lower()\nend\n'

    result = _apply(tmp_path, "slug.lua", current, block)

    assert (result.mode, result.range) == ("fragment", LineSpan(3, 8))
    assert result.text == "local M = {}\n\n" + block + "\nreturn M\n"


def test_a_changed_signature_still_finds_its_function_by_name() -> None:
    current = "def a():\n    pass\n\n\ndef slugify(text):\n    return text\n"

    result = merge(current, "def slugify(text, sep='-'):\n    return text.replace(' ', sep)\n")

    assert (result.mode, result.range) == ("fragment", LineSpan(5, 6))
    assert result.text.startswith("def a():\n    pass\n\n\ndef slugify(text, sep='-'):")


def test_imports_the_reply_repeats_are_not_doubled() -> None:
    result = merge(SLUG_PY, "import re\n\n" + FIXED_SLUGIFY)

    assert result.mode == "fragment"
    assert result.text.count("import re") == 1
    assert FIXED_SLUGIFY in result.text


def test_a_block_with_two_functions_replaces_from_the_first_through_the_last() -> None:
    current = "def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"

    result = merge(current, "def a():\n    return 10\n\n\ndef b():\n    return 20\n")

    assert (result.mode, result.range) == ("fragment", LineSpan(1, 6))
    assert result.text == current.replace("return 1\n", "return 10\n").replace("2", "20")


def test_a_markdown_section_is_replaced_up_to_the_next_heading_of_its_level() -> None:
    current = "# Title\n\nintro\n\n## Install\n\npip install x\n\n## Use\n\nrun it\n"

    result = merge(current, "## Install\n\npipx install x\n")

    assert (result.mode, result.range) == ("fragment", LineSpan(5, 7))
    assert result.text == current.replace("pip install", "pipx install")


def test_a_c_function_with_its_brace_on_the_next_line_is_replaced_up_to_its_close() -> None:
    current = "int a()\n{\n    return 1;\n}\n\nint b()\n{\n    return 2;\n}\n"

    result = merge(current, "int a()\n{\n    return 5;\n}\n")

    assert (result.mode, result.range) == ("fragment", LineSpan(1, 4))
    assert result.text == current.replace("return 1;", "return 5;")


def test_lines_of_a_function_body_shown_without_their_indentation_replace_those_lines() -> None:
    block = "text = text.casefold()\ntext = text.strip()\nreturn re.sub(r'\\W+', '-', text)\n"
    current = SLUG_PY.replace("    return re.sub(", "    text = text.strip()\n    return re.sub(")

    result = merge(current, block)

    assert (result.mode, result.range) == ("fragment", LineSpan(9, 11))
    lines = result.text.split("\n")
    assert lines[7:11] == [
        "def slugify(text):",
        "    text = text.casefold()",
        "    text = text.strip()",
        "    return re.sub(r'\\W+', '-', text)",
    ]
    assert result.text.replace("\n".join(lines[8:11]), "") == current.replace(
        "\n".join(current.split("\n")[8:11]), ""
    )


def test_lines_that_repeat_across_the_file_go_where_their_rarest_line_is() -> None:
    current = "".join(
        f"def f{i}(x):\n    y = x + {i}\n    if y > 3:\n        return y\n    return 0\n\n\n"
        for i in range(50)
    )

    result = merge(current, "y = x + 20\nif y > 4:\n    return y\n")

    assert (result.mode, result.range) == ("fragment", LineSpan(142, 144))
    assert result.text == current.replace(
        "    y = x + 20\n    if y > 3:\n", "    y = x + 20\n    if y > 4:\n"
    )


def test_settings_lines_replace_the_entries_they_change() -> None:
    current = "name: x\nversion: 1\ndeps:\n  - a\n  - b\nother: 2\n"

    result = merge(current, "deps:\n  - a\n  - c\n")

    assert (result.mode, result.range) == ("fragment", LineSpan(3, 5))
    assert result.text == "name: x\nversion: 1\ndeps:\n  - a\n  - c\nother: 2\n"


def test_a_whole_file_version_with_changed_imports_replaces_the_file() -> None:
    current = "import os\n\n\ndef a():\n    return os.getcwd()\n\n\ndef b():\n    return 2\n"
    block = current.replace("import os", "import os, sys").replace("return 2", "return sys.argv")

    assert merge(current, block) == CodeMerge(block, "whole")


def test_a_whole_file_version_replaces_the_file(tmp_path: Path) -> None:
    block = SLUG_PY.replace("text.lower()", "text.casefold()").replace("import re", "import re\n")

    result = _apply(tmp_path, "slug.py", SLUG_PY, block)

    assert (result.mode, result.range) == ("whole", None)
    assert result.text == block


def test_a_block_for_a_file_not_there_creates_it(tmp_path: Path) -> None:
    result = _apply(tmp_path, "new.py", None, "def new():\n    return 1")

    assert result == CodeMerge("def new():\n    return 1\n", "create")


def test_a_crlf_file_keeps_its_line_endings_and_its_final_newline(tmp_path: Path) -> None:
    current = SLUG_PY.replace("\n", "\r\n")

    result = _apply(tmp_path, "slug.py", current, FIXED_SLUGIFY)

    assert result.mode == "fragment"
    assert result.text.endswith('print(slugify("Hello World"))\r\n')
    assert "\n" not in result.text.replace("\r\n", "")
    assert FIXED_SLUGIFY.replace("\n", "\r\n") in result.text


def test_a_file_without_a_final_newline_gets_none() -> None:
    result = merge("def a():\n    return 1", "def a():\n    return 2\n")

    assert result.text == "def a():\n    return 2"


def test_a_block_whose_definition_is_nowhere_is_added_before_the_main_guard() -> None:
    block = "def words(text):\n    return text.split()\n"

    result = merge(SLUG_PY, block)

    assert (result.mode, result.range) == ("append", None)
    assert result.text.startswith(SLUG_PY.split("\n\n\nif __name__")[0])
    assert '    return post["tags"][0]\n\n\n' + block + '\n\nif __name__ == "__main__":' in (
        result.text
    )


def test_an_empty_block_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        merge("x = 1\n", "\n  \n")


# --- through the server -------------------------------------------------------------------


async def test_the_server_merges_into_the_open_document_rather_than_the_disk(
    agent, workspace: Path
) -> None:
    client = await agent()
    path = workspace / "slug.py"
    path.write_text("def old():\n    pass\n")
    open_document(client, path, SLUG_PY)  # unsaved in the editor

    result = await command(client, "seri.code.merge", {"path": "slug.py", "text": FIXED_SLUGIFY})

    assert result["mode"] == "fragment"
    assert result["range"] == {"startLine": 8, "endLine": 10}
    assert FIXED_SLUGIFY in result["text"] and 'post["tags"][0]' in result["text"]
    assert path.read_text() == "def old():\n    pass\n"  # nothing written: the editor does


async def test_the_server_reads_the_disk_and_answers_create_for_a_new_file(
    agent, workspace: Path
) -> None:
    client = await agent()
    (workspace / "slug.py").write_text(SLUG_PY)

    merged = await command(
        client, "seri.code.merge", {"path": str(workspace / "slug.py"), "text": FIXED_SLUGIFY}
    )
    created = await command(client, "seri.code.merge", {"path": "src/new.py", "text": "x = 1"})

    assert (merged["mode"], merged["range"]) == ("fragment", {"startLine": 8, "endLine": 10})
    assert created == {"text": "x = 1\n", "mode": "create"}


async def test_the_server_refuses_a_path_outside_the_workspace_and_a_folder(
    agent, workspace: Path, tmp_path: Path
) -> None:
    client = await agent()
    (workspace / "src").mkdir()

    message, field = await invalid(
        client, "seri.code.merge", {"path": "../elsewhere.py", "text": "x = 1"}
    )
    folder = await refused(client, "seri.code.merge", {"path": "src", "text": "x = 1"})

    assert field == "path"
    assert "outside the workspace" in message
    assert folder.startswith("Cannot apply the code block to src:")
    assert "folder" in folder
