"""Text helpers the domain's modules share (imports nothing, so any of them may use it)."""

from __future__ import annotations


def shortened(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` with an ellipsis where it was cut (a message, a title)."""
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


__all__ = ["shortened"]
