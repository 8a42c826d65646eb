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
