"""What the worst pages of the worker's thread lane cost: ``python -m bench.thread_lane``.

The thread lane (taskcrawler/worker/parsing.py) takes pages up to 512 KB and 2,000 tags and has
no deadline: a thread cannot be stopped. What bounds it is its input, so this parses the
shapes found to cost the most within those bounds, with every format a job may ask for, and
prints each one's lane and the CPU time of its parse (``time.process_time``: the machine's
load slows the wall clock, not this), the median of ``--repeat`` parses, and the size of
its Markdown. Each shape is also parsed at a quarter of its size: time growing 4 times with
the size is linear.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from taskcrawler.extract.documents import extract_page
from taskcrawler.worker.parsing import PageParser

FORMATS = ("metadata", "markdown", "text", "html", "links", "link_targets", "clean_html", "images")
SIZE = 500 * 1024


def _page(body: str) -> bytes:
    return f"<html><body>{body}</body></html>".encode()


SHAPES: dict[str, Callable[[int], bytes]] = {
    "asterisks": lambda size: b"*" * size,
    "asterisk-letter pairs": lambda size: b"*a" * (size // 2),
    "backticks": lambda size: b"`" * size,
    "markdown punctuation": lambda size: b"*_[`" * (size // 4),
    "escaped characters in <p>": lambda size: _page("<p>" + "*_`[]#>-+!\\" * (size // 11)),
    "<pre> in 990 <pre>": lambda size: _page("<pre>" * 990 + "a\n" * (size // 5) + "</pre>" * 990),
    "900 list items": lambda size: _page("<ul>" + ("<li>" + "z" * (size // 900) + "</li>") * 900),
    "990 nested divs of text": lambda size: _page(
        "".join("<div>" + "word " * (size // 5000) for _ in range(990)) + "</div>" * 990
    ),
}


def cpu_seconds(body: bytes, repeat: int) -> float:
    took = []
    for _ in range(repeat):
        started = time.process_time()
        extract_page(body, url="http://x.test/", content_type="text/html", formats=FORMATS)
        took.append(time.process_time() - started)
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lanes = PageParser(processes=1)
    for name, make in SHAPES.items():
        body, quarter = make(SIZE), make(SIZE // 4)
        markdown = extract_page(body, url="http://x.test/", formats=("markdown",)).markdown
        print(
            f"{name:<28} {len(body) / 1024:6.0f} KB {body.count(b'<'):5} tags "
            f"{lanes.lane(body):<8} {cpu_seconds(body, args.repeat) * 1000:7.0f} ms CPU "
            f"(a quarter: {cpu_seconds(quarter, args.repeat) * 1000:5.0f} ms)  "
            f"markdown {len(markdown or ''):,} chars"
        )


if __name__ == "__main__":
    main()
