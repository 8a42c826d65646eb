"""How long page parsing can stall the worker's event loop, or hold up other pages:
``python -m bench.parse_stall``.

Extracts a 10 MB page and pathological ones (40,000, 100,000 and 200,000 nested elements;
200,000 links) the way the worker does (taskcrawler/worker/parsing.py picks inline, thread or
a process by size and tag count), while a ticker on the event loop records its worst lag.
First parses a normal 1 MB page right behind a 200,000-deep one and prints how long each took;
then one line per page: its lane, extraction time (or the error) and the loop's longest stall.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from taskcrawler.worker.parsing import PageParser


def ten_megabytes() -> bytes:
    paragraph = "<p>" + "lorem ipsum dolor sit amet " * 40 + '<a href="/x">x</a></p>\n'
    body = paragraph * (10 * 1024 * 1024 // len(paragraph))
    return f"<html><head><title>Big</title></head><body>{body}</body></html>".encode()


def deeply_nested() -> bytes:
    return ("<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000).encode()


def deepest() -> bytes:
    return ("<html><body>" + "<div>" * 200_000 + "deep" + "</div>" * 200_000).encode()


def one_megabyte() -> bytes:
    paragraph = "<p>" + "lorem ipsum dolor sit amet " * 40 + '<a href="/x">x</a></p>\n'
    body = paragraph * (1024 * 1024 // len(paragraph))
    return f"<html><head><title>1 MB</title></head><body>{body}</body></html>".encode()


def nested_medium() -> bytes:
    return ("<html><body>" + "<div>" * 40_000 + "deep" + "</div>" * 40_000).encode()


def many_links() -> bytes:
    links = "".join(f'<a href="/l/{n}" rel="nofollow">{n}</a>' for n in range(200_000))
    return f"<html><body>{links}</body></html>".encode()


async def _worst_lag(until: asyncio.Event, interval: float = 0.005) -> float:
    worst = 0.0
    while not until.is_set():
        started = time.perf_counter()
        await asyncio.sleep(interval)
        worst = max(worst, time.perf_counter() - started - interval)
    return worst


async def _timed(parser: PageParser, body: bytes) -> str:
    started = time.perf_counter()
    try:
        await parser.extract(
            body, url="http://example.test/", charset="utf-8", formats=("metadata",)
        )
        outcome = "done"
    except Exception as exc:
        outcome = type(exc).__name__
    return f"{outcome} after {(time.perf_counter() - started) * 1000:8.1f} ms"


async def measure(name: str, make: Callable[[], bytes], parser: PageParser) -> None:
    body = make()
    done = asyncio.Event()
    ticker = asyncio.create_task(_worst_lag(done))
    await asyncio.sleep(0.05)
    took = await _timed(parser, body)
    done.set()
    lag = await ticker
    print(
        f"{name:<24} {len(body) / 1e6:6.1f} MB  {parser.lane(body):<8} extract {took}  "
        f"worst loop stall {lag * 1000:7.1f} ms"
    )


async def behind_a_deep_page(parser: PageParser) -> None:
    deep, normal = deepest(), one_megabyte()
    first = asyncio.create_task(_timed(parser, deep))
    await asyncio.sleep(0)  # the deep page takes its process first
    second = await _timed(parser, normal)
    print(f"200,000 nested divs, then a 1 MB page right behind it: 1 MB page {second}")
    print(f"                                        the deep page  {await first}")


async def main() -> None:
    parser = PageParser()
    try:
        # Start every parser process first: starting one is not what is measured.
        warm = b"<p>warm</p>" * 100_000
        await asyncio.gather(
            *(
                parser.extract(warm, url="http://x.test/", charset=None, formats=())
                for _ in range(parser.pool.size)
            )
        )
        # First, while both processes are warm: a page may leave its process holding enough
        # memory to be replaced, and the replacement's start is not what this measures.
        await behind_a_deep_page(parser)
        for name, make in (
            ("10 MB page", ten_megabytes),
            ("1 MB page", one_megabyte),
            ("40,000 nested divs", nested_medium),
            ("100,000 nested divs", deeply_nested),
            ("200,000 nested divs", deepest),
            ("200,000 links", many_links),
        ):
            await measure(name, make, parser)
    finally:
        await parser.aclose()


if __name__ == "__main__":
    asyncio.run(main())
