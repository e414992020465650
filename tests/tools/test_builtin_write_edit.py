import os
import stat

import pytest

from agentrio.tools.builtin import edit, write


async def test_write_creates_the_file_and_its_folders(workspace, call):
    result = await call(write(workspace), path="src/pkg/new.py", content="print('hi')\n")
    assert not result.is_error
    assert result.content == "Created src/pkg/new.py (12 bytes, 1 line)"
    assert (workspace / "src/pkg/new.py").read_text() == "print('hi')\n"


async def test_write_replaces_atomically_and_keeps_the_mode(workspace, call):
    script = workspace / "run.sh"
    script.write_text("old\n")
    script.chmod(0o750)
    result = await call(write(workspace), path="run.sh", content="new\n")
    assert result.content == "Replaced run.sh (4 bytes, 1 line)"
    assert script.read_text() == "new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(os.listdir(workspace)) == ["link-out", "run.sh", "secret-link.txt"]  # no temporary left


async def test_write_to_a_link_inside_replaces_its_target(workspace, call):
    (workspace / "real.txt").write_text("old\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    await call(write(workspace), path="alias.txt", content="new\n")
    assert (workspace / "alias.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new\n"


async def test_write_to_a_directory(workspace, call):
    (workspace / "src").mkdir()
    result = await call(write(workspace), path="src", content="x")
    assert result.is_error and "src is a directory" in result.content


async def test_write_under_a_file(workspace, call):
    (workspace / "a.txt").write_text("x")
    result = await call(write(workspace), path="a.txt/b.txt", content="x")
    assert result.is_error and (workspace / "a.txt").read_text() == "x"


@pytest.fixture
def source(workspace):
    path = workspace / "app.py"
    path.write_text("def main():\n    print('hello')\n    return 0\n")
    return path


async def test_edit_replaces_a_unique_string_and_returns_the_diff(workspace, source, call):
    result = await call(edit(workspace), path="app.py", old_string="'hello'", new_string="'goodbye'")
    assert not result.is_error
    assert source.read_text() == "def main():\n    print('goodbye')\n    return 0\n"
    diff = (
        "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n def main():\n"
        "-    print('hello')\n+    print('goodbye')\n     return 0\n"
    )
    assert result.content == f"Edited app.py (replaced once):\n{diff}"
    assert result.details == {"path": "app.py", "replacements": 1, "diff": diff}


async def test_edit_diff_marks_a_missing_final_newline(workspace, call):
    (workspace / "a.txt").write_text("one\ntwo")
    result = await call(edit(workspace), path="a.txt", old_string="two", new_string="three")
    assert result.details["diff"].endswith(
        "-two\n\\ No newline at end of file\n+three\n\\ No newline at end of file\n"
    )


async def test_edit_refuses_a_string_that_is_not_found(workspace, source, call):
    result = await call(edit(workspace), path="app.py", old_string="print('bye')", new_string="x")
    assert result.is_error and "old_string was not found in app.py" in result.content
    assert "print('hello')" in source.read_text()


async def test_edit_refuses_a_string_found_several_times(workspace, call):
    (workspace / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    result = await call(edit(workspace), path="a.txt", old_string="x = 1", new_string="x = 2")
    assert result.is_error and "old_string occurs 3 times in a.txt" in result.content
    assert (workspace / "a.txt").read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_replace_all(workspace, call):
    (workspace / "a.txt").write_text("x = 1\nx = 1\n")
    result = await call(edit(workspace), path="a.txt", old_string="1", new_string="2", replace_all=True)
    assert result.content.startswith("Edited a.txt (replaced 2 times):")
    assert (workspace / "a.txt").read_text() == "x = 2\nx = 2\n"


async def test_edit_keeps_line_endings_and_mode(workspace, call):
    path = workspace / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    path.chmod(0o600)
    await call(edit(workspace), path="dos.txt", old_string="two", new_string="2")
    assert path.read_bytes() == b"one\r\n2\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_edit_with_no_change(workspace, source, call):
    result = await call(edit(workspace), path="app.py", old_string="main", new_string="main")
    assert result.is_error and "nothing to change" in result.content


async def test_edit_missing_file(workspace, call):
    result = await call(edit(workspace), path="gone.py", old_string="a", new_string="b")
    assert result.is_error and result.content == "gone.py does not exist in the workspace"


async def test_edit_binary_file(workspace, call):
    (workspace / "blob").write_bytes(b"a\x00b")
    result = await call(edit(workspace), path="blob", old_string="a", new_string="b")
    assert result.is_error and "blob is a binary file" in result.content
    assert (workspace / "blob").read_bytes() == b"a\x00b"


@pytest.mark.parametrize("name", ["a" * 251 + ".txt", "é" * 125 + "a.txt"], ids=["ascii", "multibyte"])
async def test_write_and_edit_a_file_whose_name_has_the_longest_length_allowed(workspace, call, name):
    assert len(name.encode()) == 255
    result = await call(write(workspace), path=name, content="one\n")
    assert not result.is_error, result.content
    result = await call(edit(workspace), path=name, old_string="one", new_string="two")
    assert not result.is_error, result.content
    assert (workspace / name).read_text() == "two\n"
    assert [p for p in os.listdir(workspace) if p.endswith(".tmp")] == []
