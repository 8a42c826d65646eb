"""The parsed page: lexbor's tree, with one CSS engine per thread instead of one per page.

selectolax gives every parsed document its own CSS engine (lexbor's selector parser and
matcher), made at the document's first query: about 40 us, as much as parsing a small page, on
every page. The engine holds no state of a document between queries (each query is parsed,
matched and freed in one call, holding the GIL), so one engine serves every document of a
thread; a thread of its own for each, as the parse lanes run extractions in threads too.

A page's tree is built, read and dropped in one thread, so the engine is looked up once, when
the tree is made: every query asks for it (tens a page), and a thread-local lookup each time
cost several times what reading an attribute does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from selectolax.lexbor import LexborCSSSelector, LexborHTMLParser

_engines = threading.local()


def _thread_engine() -> LexborCSSSelector:
    engine: LexborCSSSelector | None = getattr(_engines, "engine", None)
    if engine is None:
        engine = _engines.engine = LexborCSSSelector()  # type: ignore[no-untyped-call]
    return engine


class PageTree(LexborHTMLParser):
    """A :class:`LexborHTMLParser` whose queries use this thread's CSS engine."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._engine = _thread_engine()

    @property
    def selector(self) -> LexborCSSSelector:
        return self._engine


# Tags are compared by lexbor's id, not by name: ``.tag`` decodes the element's name into a new
# string at each read, ``.tag_id`` returns an int, in about half the time, and the walks read
# the tag of every node they pass. A known HTML tag's id is fixed by lexbor's table of names, the
# same in every document; a tag lexbor does not know gets an id of its document's own, which
# never equals a known one.
_ID_SOURCE = LexborHTMLParser("<p>text<!--comment--></p>")


def tag_id(name: str) -> int:
    """lexbor's id of the known HTML tag ``name``: what ``node.tag_id`` is for such a node."""
    found: int = _ID_SOURCE.create_node(name).tag_id
    if found != LexborHTMLParser("<x-never-a-tag></x-never-a-tag>").create_node(name).tag_id:
        raise ValueError(f"{name!r} is not a tag lexbor knows: its id is a document's own")
    return found


def tag_ids(names: Iterable[str]) -> frozenset[int]:
    return frozenset(tag_id(name) for name in names)


def _node_id(tag: str) -> int:
    nodes = _ID_SOURCE.root.traverse(include_text=True) if _ID_SOURCE.root is not None else []
    return int(next(node for node in nodes if node.tag == tag).tag_id)


#: ``tag_id`` of a text node, and of a comment.
TEXT_ID = _node_id("-text")
COMMENT_ID = _node_id("-comment")
