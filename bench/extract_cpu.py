"""CPU time of one extraction, per page: the benchmark target's small pages and the two corpora.

    python -m bench.extract_cpu [--sets bench trafilatura wcxb] [--repeat 3]
                                [--formats metadata markdown] [--charset utf-8]

For each page, ``extract_page`` is timed on the thread's CPU clock (other work on a shared
machine does not count) ``--repeat`` times and the least is kept; each set prints the median and
the total over its pages. ``bench`` is the 64 variants ``bench.target`` serves (what
``bench.worker_cpu`` and ``bench.throughput`` fetch), ``trafilatura`` and ``wcxb`` the real pages
of ``shared/corpora`` (found as ``bench.extract_quality`` and ``bench.wcxb_quality`` find them).
The default formats are the API's (metadata and Markdown). To compare two builds, run this from
each tree in turn, alternated (old, new, old, new), with the load average beside each figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench import extract_quality, wcxb_quality
from bench.target import VARIANTS, page
from taskcrawler.extract.documents import extract_page

SETS = ("bench", "trafilatura", "wcxb")


def pages_of(name: str) -> Iterator[tuple[str, bytes]]:
    """(url, body) of each page of set ``name``."""
    if name == "bench":
        for n in range(VARIANTS):
            yield f"http://127.0.0.1:1/p/{n}", page(n)
    elif name == "trafilatura":
        corpus = extract_quality.find_corpus()
        if corpus is None:
            sys.exit("no trafilatura-eval corpus: see bench.extract_quality")
        for item in extract_quality.load_pages(corpus):
            yield item.url, item.body
    else:
        found = wcxb_quality.find_corpus()
        if found is None:
            sys.exit("no wcxb-dev corpus: see bench.wcxb_quality")
        for entry in wcxb_quality.load_pages(found, "all"):
            yield entry.url, entry.body


def page_times(
    pages: list[tuple[str, bytes]], formats: tuple[str, ...], charset: str | None, repeat: int
) -> list[int]:
    """The least of ``repeat`` thread-CPU times (ns) of each page's extraction."""
    url, body = pages[0]
    extract_page(body, url=url, charset=charset, formats=formats)  # imports, caches: untimed
    least: list[int] = []
    for url, body in pages:
        times = []
        for _ in range(repeat):
            start = time.thread_time_ns()
            extract_page(body, url=url, charset=charset, formats=formats)
            times.append(time.thread_time_ns() - start)
        least.append(min(times))
    return least


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--repeat", type=int, default=3, help="times per page (least kept)")
    parser.add_argument("--formats", nargs="+", default=["metadata", "markdown"])
    parser.add_argument("--charset", help="the HTTP header's charset (default: none)")
    args = parser.parse_args()
    formats = tuple(args.formats)
    print(f"formats {','.join(formats)}, least of {args.repeat}, tree {Path.cwd()}")
    for name in args.sets:
        pages = list(pages_of(name))
        load = os.getloadavg()[0]
        times = page_times(pages, formats, args.charset, args.repeat)
        print(
            f"{name:12s} pages {len(times):5d}  median {statistics.median(times) / 1e3:8.1f} us"
            f"  total {sum(times) / 1e9:7.3f} s  (load {load:.1f})"
        )


if __name__ == "__main__":
    main()
