from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from selectolax.lexbor import LexborHTMLParser


@dataclass(slots=True)
class Extraction:
    title: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8")
    except (LookupError, UnicodeDecodeError):
        return body.decode("utf-8", errors="replace")


def extract(
    body: bytes,
    *,
    url: str,
    charset: str | None = None,
    formats: Collection[str] = ("metadata",),
) -> Extraction:
    """Parse ``body`` (the page as fetched from ``url``) and return what it says."""
    tree = LexborHTMLParser(_decode(body, charset))
    node = tree.css_first("title")
    title = " ".join(node.text().split()) if node is not None else None
    return Extraction(title=title or None, metadata={"title": title or None})
