"""Where a page is parsed: inline when small, in a thread when medium, in a child process when big.

Measured (``python -m bench.parse_stall``): lexbor releases the GIL while it parses, and its
parse is what explodes on pathological markup (40,000 nested divs, 440 KB: 2.3 s), so a thread
keeps the loop free for those (10 ms stall instead of 2.3 s). Our Python work after the parse
holds the GIL in proportion to the page's size: on a 10 MB page a thread still stalled the loop
84 ms, so big pages go to a child process. Small pages (nearly all) are parsed inline, where a
hand-off would cost more than the parse.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable, Collection
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from taskcrawler.extract import Extraction, extract

#: Bodies up to this size are parsed inline: even pathological ones stay under ~50 ms.
INLINE_PARSE_LIMIT = 64 * 1024
#: Bodies up to this size are parsed in a thread; bigger ones in the child process.
THREAD_PARSE_LIMIT = 512 * 1024


class PageParser:
    def __init__(
        self,
        extractor: Callable[..., Extraction] = extract,
        *,
        inline_limit: int = INLINE_PARSE_LIMIT,
        thread_limit: int = THREAD_PARSE_LIMIT,
    ) -> None:
        self.extractor = extractor
        self.inline_limit = inline_limit
        self.thread_limit = thread_limit
        self._pool: ProcessPoolExecutor | None = None

    async def extract(
        self, body: bytes, *, url: str, charset: str | None, formats: Collection[str]
    ) -> Extraction:
        call = partial(self.extractor, body, url=url, charset=charset, formats=tuple(formats))
        if len(body) <= self.inline_limit:
            return call()
        if len(body) <= self.thread_limit:
            return await asyncio.to_thread(call)
        return await asyncio.get_running_loop().run_in_executor(self._child(), call)

    def _child(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn, not fork: forking a process that runs an event loop and driver threads
            # copies their locks in whatever state they are.
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
