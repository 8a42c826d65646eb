"""Where a page is parsed: inline when small, in a child process when big.

Extraction is CPU work that holds the GIL, so a thread does not keep the event loop free: while a
10 MB page is parsed, heartbeats, claims and every other job would wait. Big pages therefore go to
one child process; small ones (nearly all) are parsed inline, where the round trip to a child
would cost more than the parse.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable, Collection
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from taskcrawler.extract import Extraction, extract

#: Bodies above this size are parsed in the child process.
INLINE_PARSE_LIMIT = 512 * 1024


class PageParser:
    def __init__(
        self,
        extractor: Callable[..., Extraction] = extract,
        *,
        inline_limit: int = INLINE_PARSE_LIMIT,
    ) -> None:
        self.extractor = extractor
        self.inline_limit = inline_limit
        self._pool: ProcessPoolExecutor | None = None

    async def extract(
        self, body: bytes, *, url: str, charset: str | None, formats: Collection[str]
    ) -> Extraction:
        call = partial(self.extractor, body, url=url, charset=charset, formats=tuple(formats))
        if len(body) <= self.inline_limit:
            return call()
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
