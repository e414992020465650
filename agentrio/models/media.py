"""Images and documents as the request builders send them."""

from __future__ import annotations

import base64
from typing import TypeGuard

from ..messages import Document, Image, Part

MEDIA = (Image, Document)


def base64_text(part: Image | Document) -> str:
    return base64.b64encode(part.data).decode("ascii")


def data_uri(part: Image | Document) -> str:
    """``data:<type>;base64,<data>``: how OpenAI takes inline images and files."""
    return f"data:{part.media_type};base64,{base64_text(part)}"


def has_media(content: str | list[Part]) -> TypeGuard[list[Part]]:
    return not isinstance(content, str) and any(isinstance(part, MEDIA) for part in content)


def document_text(document: Document) -> str:
    """A plain-text document where a provider takes only text: its name, then its text."""
    title = f"[document {document.name}]" if document.name else "[document]"
    return f"{title}\n{document.text}"


def file_name(document: Document) -> str:
    return document.name or "document.pdf"
