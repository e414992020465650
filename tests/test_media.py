"""Image and Document parts are checked when made: a part that exists is one
every provider takes, so it cannot fail a session's requests later."""

from __future__ import annotations

import pytest

from agentrio import Document, Image, ToolResultMessage, UserMessage
from agentrio.messages import MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, AssistantMessage, Message, Text, converter

PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
JPEG = b"\xff\xd8\xff\xe0" + bytes(16)
GIF = b"GIF89a" + bytes(16)
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(8)


@pytest.mark.parametrize(
    "data, media_type", [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")]
)
def test_each_supported_image_type_is_taken_and_read_back_by_its_bytes(tmp_path, data, media_type):
    assert Image(data, media_type).media_type == media_type
    (tmp_path / "file.bin").write_bytes(data)  # the name says nothing: the bytes do
    assert Image.from_path(tmp_path / "file.bin") == Image(data, media_type)


@pytest.mark.parametrize(
    "make, error, says",
    [
        (
            lambda: Image(PNG, "image/jpeg"),
            ValueError,
            "Image.data: the bytes of image/png, labelled image/jpeg",
        ),
        (lambda: Image(b"hello", "image/png"), ValueError, "bytes that are no supported image"),
        (lambda: Image(b"RIFF\x10\x00\x00\x00WAVEfmt ", "image/webp"), ValueError, "no supported image"),
        (lambda: Image(PNG, "image/tiff"), ValueError, "Image.media_type: expected one of"),
        (
            lambda: Image("iVBORw0KGgo=", "image/png"),
            TypeError,
            "Image.data: expected bytes, got a value of type str",
        ),
        (
            lambda: Image(PNG + bytes(MAX_IMAGE_BYTES), "image/png"),
            ValueError,
            "over the limit of 5,242,880 bytes",
        ),
        (lambda: Document(b"plain", "application/pdf"), ValueError, "does not start with %PDF-"),
        (lambda: Document(b"\xff\xfe", "text/plain"), ValueError, "not UTF-8 text"),
        (lambda: Document(b"%PDF-1.4", "application/msword"), ValueError, "Document.media_type"),
        (
            lambda: Document(b"%PDF-" + bytes(MAX_DOCUMENT_BYTES), "application/pdf"),
            ValueError,
            "over the limit",
        ),
    ],
)
def test_a_part_no_provider_would_take_is_refused_when_made_naming_the_field(make, error, says):
    with pytest.raises(error) as raised:
        make()
    assert says in str(raised.value)


def test_from_path_reads_a_pdf_by_its_bytes_and_text_by_its_name_and_refuses_the_rest(tmp_path):
    (tmp_path / "report").write_bytes(b"%PDF-1.7 ...")
    (tmp_path / "notes.md").write_text("# Notes\n")
    (tmp_path / "tool.exe").write_bytes(b"MZ\x90\x00")
    assert Document.from_path(tmp_path / "report") == Document(b"%PDF-1.7 ...", "application/pdf", "report")
    assert Document.from_path(tmp_path / "notes.md", name="n") == Document(b"# Notes\n", "text/plain", "n")
    with pytest.raises(ValueError, match="neither a PDF nor a text file"):
        Document.from_path(tmp_path / "tool.exe")
    with pytest.raises(ValueError, match="not a PNG, JPEG, GIF or WebP image"):
        Image.from_path(tmp_path / "notes.md")


def test_a_file_over_the_limit_is_refused_without_reading_it_whole(tmp_path):
    big = tmp_path / "big.png"
    with big.open("wb") as f:
        f.write(PNG)
        f.truncate(MAX_IMAGE_BYTES * 4)
    with pytest.raises(ValueError, match="over the limit"):
        Image.from_path(big)


def test_parts_go_in_user_messages_and_tool_results_not_in_assistant_messages():
    image = Image(PNG, "image/png")
    for message in (UserMessage([Text("see"), image]), ToolResultMessage("c1", "shot", [image])):
        assert converter.structure(converter.unstructure(message), Message) == message
    assert converter.unstructure(image) == {
        "type": "image",
        "data": "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAA",
        "media_type": "image/png",
    }
    with pytest.raises(TypeError, match="AssistantMessage.content"):
        AssistantMessage([image])
    # The bytes are not shown whole where a part is printed.
    assert repr(image) == "Image(data=<24 bytes>, media_type='image/png')"
