"""Where a page is parsed: inline, in a thread, or in a pool of processes with a deadline.

Nothing one page does may hold parsing for the others. What can take long is known and measured
(``python -m bench.parse_stall``; worst cases on this shared 2-core machine while busy):

* lexbor's parse grows with nesting depth x tags: 10,000 nested divs took 0.3-0.5 s, 40,000
  took 5.6 s, 200,000 over two minutes. ``extract`` cuts nesting past 512 levels on pages with
  many tags (:mod:`taskcrawler.extract.nesting`), so below that many tags a parse stays short;
* rendering Markdown and text costs about 0.17 ms per element of some shapes (a list of links),
  holding the GIL, and all our Python work grows with the page.

So the lane is chosen by size and by tag count (``<`` counted, a memchr over the bytes):

* inline: up to 64 KB and 500 tags, where a hand-off would cost more than the parse. Nearly
  all small pages; the worst measured took 1 ms for metadata, 88 ms with every format;
* a thread: up to 512 KB and 2,000 tags; lexbor releases the GIL while it parses. The worst
  measured took about 20 ms for metadata, 0.33 s with every format; the worst shape found
  since, 500 KB of ``*a``, 0.75-0.85 s of CPU with every format, growing with the page as its
  size does (``python -m bench.thread_lane``). A thread cannot be stopped, so this lane has no
  deadline: its bounds are its limit, and the selectors clients give are held to a subset
  whose matching is linear (:mod:`taskcrawler.domain.selectors`);
* processes: every other page, in a pool of ``parse_processes`` children. Each parse there has
  ``parse_timeout_seconds``: past it the child is killed (a new one replaces it on the next
  parse) and :class:`ParseTimeout` is raised, so a pathological page costs its own job, and the
  others wait at most that long for a free process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import TypeVar

from taskcrawler.common.processes import CallTimeout, ChildDied, ProcessPool
from taskcrawler.domain.selectors import IgnoreSelector
from taskcrawler.extract import Extraction
from taskcrawler.extract.documents import extract_page, is_document
from taskcrawler.extract.links import MAX_LINKS_PER_PAGE
from taskcrawler.extract.page import WHOLE_CONTENT, ContentChoice

#: Parsed inline up to this size and this many tags.
INLINE_PARSE_LIMIT = 64 * 1024
INLINE_TAG_LIMIT = 500
#: Parsed in a thread up to this size and this many tags; the rest goes to the processes.
THREAD_PARSE_LIMIT = 512 * 1024
THREAD_TAG_LIMIT = 2_000
DEFAULT_TIMEOUT_SECONDS = 15.0
DEFAULT_PROCESSES = 2
#: How far a parser process's memory may grow past its start: about four times what the
#: largest page the default body limit allows takes to parse (a 7 MB page of 200,000 links
#: held 240-270 MB).
DEFAULT_MEMORY_MB = 1024

T = TypeVar("T")


class ParseTimeout(Exception):
    """A parse overran its deadline; the process that ran it was killed."""


class ParseCrashed(Exception):
    """A parse killed the process that ran it (a hostile document crashing its library)."""


class PageParser:
    def __init__(
        self,
        extractor: Callable[..., Extraction] = extract_page,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        processes: int = DEFAULT_PROCESSES,
        max_links: int = MAX_LINKS_PER_PAGE,
        inline_limit: int = INLINE_PARSE_LIMIT,
        thread_limit: int = THREAD_PARSE_LIMIT,
        inline_tags: int = INLINE_TAG_LIMIT,
        thread_tags: int = THREAD_TAG_LIMIT,
        memory_mb: float | None = DEFAULT_MEMORY_MB,
    ) -> None:
        self.extractor = extractor
        self.timeout = timeout
        self.max_links = max_links
        self.inline_limit = inline_limit
        self.thread_limit = thread_limit
        self.inline_tags = inline_tags
        self.thread_tags = thread_tags
        self.memory_mb = memory_mb
        self.pool = ProcessPool(
            processes, timeout, preload=(extractor.__module__,), memory_limit_mb=memory_mb
        )

    def lane(self, body: bytes, content_type: str | None = None) -> str:
        """``inline``, ``thread`` or ``process``: where :meth:`extract` parses ``body``. A
        document (a PDF) always goes to the processes: its library is C code reading hostile
        bytes, which may loop or crash."""
        if is_document(content_type):
            return "process"
        size = len(body)
        if size > self.thread_limit:
            return "process"
        tags = body.count(b"<")
        if size <= self.inline_limit and tags <= self.inline_tags:
            return "inline"
        return "thread" if tags <= self.thread_tags else "process"

    async def extract(
        self,
        body: bytes,
        *,
        url: str,
        charset: str | None,
        formats: Collection[str],
        ignore: Sequence[IgnoreSelector] = (),
        content_type: str | None = None,
        choice: ContentChoice = WHOLE_CONTENT,
        max_pages: int | None = None,
    ) -> Extraction:
        options: dict[str, object] = {"ignore": tuple(ignore)} if ignore else {}
        if is_document(content_type):
            options.update(content_type=content_type, max_pages=max_pages)
        if choice != WHOLE_CONTENT:
            options["choice"] = choice
        call = partial(
            self.extractor,
            body,
            url=url,
            charset=charset,
            formats=tuple(formats),
            max_links=self.max_links,
            **options,
        )
        return await self.run(call, body, content_type)

    async def run(self, call: Callable[[], T], body: bytes, content_type: str | None = None) -> T:
        """``call()``, a parse of ``body``, in the lane :meth:`lane` picks for ``body``: a
        picklable call (a ``functools.partial`` of a module-level function)."""
        lane = self.lane(body, content_type)
        if lane == "inline":
            return call()
        if lane == "thread":
            return await asyncio.to_thread(call)
        try:
            return await self.pool.run(call)
        except CallTimeout:
            raise ParseTimeout(
                f"parsing took over {self.timeout:g}s and was stopped ({len(body):,} bytes)"
            ) from None
        except ChildDied as exc:
            raise ParseCrashed(f"parsing {len(body):,} bytes killed its process: {exc}") from None
        except MemoryError:
            raise ParseCrashed(
                f"parsing {len(body):,} bytes needed more than the {self.memory_mb:g} MB a "
                "parser process may take"
            ) from None

    async def aclose(self) -> None:
        await self.pool.aclose()
