import tracemalloc

import pytest

from agentrio import Image
from agentrio.messages import MAX_IMAGE_BYTES
from agentrio.tools.builtin import read
from agentrio.tools.builtin.reading import MAX_LINE_CHARS

#: The smallest whole PNG: one transparent pixel.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


async def test_lines_come_numbered(workspace, call):
    (workspace / "a.txt").write_text("alpha\nbeta\r\ngamma")
    result = await call(read(workspace), path="a.txt")
    assert not result.is_error
    assert result.content == "     1\talpha\n     2\tbeta\n     3\tgamma"


async def test_a_line_range(workspace, call):
    (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await call(read(workspace), path="a.txt", offset=4, limit=2)
    lines = result.content.splitlines()
    assert lines[:2] == ["     4\tline 4", "     5\tline 5"]
    assert lines[2] == "[a.txt goes on (71 bytes in all); read on with offset=6]"


async def test_the_last_lines_have_no_note(workspace, call):
    (workspace / "a.txt").write_text("one\ntwo\n")
    result = await call(read(workspace), path="a.txt", offset=2)
    assert result.content == "     2\ttwo"


async def test_a_huge_file_is_capped_with_a_note(workspace, call):
    (workspace / "big.txt").write_text("x" * 100 + "\n" + "".join(f"{i}\n" for i in range(100_000)))
    result = await call(read(workspace, max_chars=1000), path="big.txt")
    assert len(result.content) < 1300
    assert result.content.splitlines()[-1].startswith("[big.txt goes on (")
    assert "read on with offset=" in result.content


async def test_a_long_line_is_cut(workspace, call):
    (workspace / "wide.txt").write_text("y" * (MAX_LINE_CHARS + 10) + "\n")
    result = await call(read(workspace), path="wide.txt")
    assert result.content.endswith("y [... 10 more characters on this line]")


async def test_an_absolute_path_inside_the_workspace(workspace, call):
    (workspace / "a.txt").write_text("hi\n")
    result = await call(read(workspace), path=str(workspace / "a.txt"))
    assert result.content == "     1\thi"


async def test_an_empty_file(workspace, call):
    (workspace / "empty").write_text("")
    result = await call(read(workspace), path="empty")
    assert not result.is_error and result.content == "empty is empty"


async def test_missing_file(workspace, call):
    result = await call(read(workspace), path="nope.txt")
    assert result.is_error and result.content == "nope.txt does not exist in the workspace"


async def test_offset_past_the_end(workspace, call):
    (workspace / "a.txt").write_text("one\ntwo\n")
    result = await call(read(workspace), path="a.txt", offset=5)
    assert result.is_error and "offset 5 is past the end of a.txt, which has 2 lines" in result.content


async def test_binary_file(workspace, call):
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    result = await call(read(workspace), path="blob.bin")
    assert result.is_error and "blob.bin is a binary file" in result.content


@pytest.mark.parametrize(
    "name, data, media_type",
    [
        ("shot.png", PNG, "image/png"),
        ("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)), "image/jpeg"),
        ("anim.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "image/gif"),
        ("pic.webp", b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10", "image/webp"),
    ],
)
async def test_an_image_file_is_read_as_an_image_with_its_exact_bytes(
    workspace, call, name, data, media_type
):
    (workspace / name).write_bytes(data)
    result = await call(read(workspace), path=name)
    assert not result.is_error
    assert result.content == [Image(data, media_type)]


async def test_an_image_too_large_for_any_provider_is_refused(workspace, call):
    (workspace / "huge.png").write_bytes(PNG + bytes(MAX_IMAGE_BYTES))
    result = await call(read(workspace), path="huge.png")
    assert result.is_error and "huge.png is an image over" in result.content


async def test_undecodable_file(workspace, call):
    (workspace / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = await call(read(workspace), path="latin.txt")
    assert result.is_error and "latin.txt is not UTF-8 text" in result.content


async def test_a_directory(workspace, call):
    (workspace / "src").mkdir()
    result = await call(read(workspace), path="src")
    assert result.is_error and "src is a directory; use ls" in result.content


async def test_a_long_line_of_multibyte_characters_is_cut_and_counted(workspace, call):
    (workspace / "wide.txt").write_text("é" * (MAX_LINE_CHARS + 70_000) + "\r\nnext\n")
    result = await call(read(workspace), path="wide.txt")
    first, second = result.content.splitlines()
    assert first == f"     1\t{'é' * MAX_LINE_CHARS} [... 70,000 more characters on this line]"
    assert second == "     2\tnext"


async def test_a_long_line_that_is_not_utf8_is_refused(workspace, call):
    (workspace / "bad.txt").write_bytes(b"x" * 100_000 + b"\xff\n")
    result = await call(read(workspace), path="bad.txt")
    assert result.is_error and "not UTF-8" in result.content


async def test_reading_a_huge_single_line_file_holds_only_a_chunk_of_it(workspace, call):
    (workspace / "one-line.txt").write_bytes(b"z" * 20_000_000)
    tracemalloc.start()
    try:
        result = await call(read(workspace), path="one-line.txt")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (
        result.content
        == f"     1\t{'z' * MAX_LINE_CHARS} [... {20_000_000 - MAX_LINE_CHARS:,} more characters on this line]"
    )
    assert peak < 2_000_000  # the file is 20 MB
