"""The bounds behind change detection: ``python -m bench.monitor_bounds [--quick] [--corpus TAR]``.

Prints, one line per case:

* selectors: how long lexbor's own matching takes on the selectors the ignore-selector grammar
  refuses or rewrites (nested descendant combinators, ``~``, ``:nth-of-type``), against our
  removal of the accepted ones on the same pages and the extraction of those pages;
* diffs: the unified diff's time on hostile pairs of texts (reversed, two repeated lines, many
  scattered edits) and on an ordinary edit of a big page, and whether it fell back to one hunk;
* run content: compressed size and speed of a run's Markdown and text with each ISA-L level and
  zlib's default, on real pages (the trafilatura evaluation corpus, if it is there).

``--quick`` shrinks every case (the test suite runs it that way: it asserts no timings).
"""

from __future__ import annotations

import argparse
import io
import random
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from isal import isal_zlib
from selectolax.lexbor import LexborHTMLParser

from taskcrawler.domain.diffs import unified_diff
from taskcrawler.domain.runs import RunContent
from taskcrawler.domain.selectors import parse_ignore_selectors
from taskcrawler.extract import extract
from taskcrawler.extract.ignore import remove_ignored

CORPUS = Path("/work/shared/corpora/trafilatura-eval/pages.tar.xz")


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def nested(depth: int) -> str:
    return "<html><body>" + "<div>" * depth + "x" + "</div>" * depth + "</body></html>"


def siblings(count: int) -> str:
    return "<html><body>" + "<div></div>" * count + "</body></html>"


def cards(count: int) -> str:
    items = "".join(
        f"<div class='c{i % 7}'><span>t{i}</span><b class=x>b</b></div>" for i in range(count)
    )
    return f"<html><body><main>{items}</main></body></html>"


def selector_cases(quick: bool) -> None:
    depth = 120 if quick else 300
    flat = 2_000 if quick else 20_000
    lexbor_cases = [
        (f"{depth} nested divs", nested(depth), "p div div"),
        (f"{depth} nested divs", nested(depth), "p div div div"),
        (f"{flat:,} sibling divs", siblings(flat), "p ~ div"),
        (f"{flat:,} sibling divs", siblings(flat), "div:nth-of-type(3)"),
    ]
    attribute = 500_000 if quick else 5_000_000
    needle = "a" * 63 + "b"
    lexbor_cases.append(
        (
            f"a {attribute:,}-byte attribute",
            f"<html><body><div class='{'a' * attribute}'></div></body></html>",
            f"[class*='{needle}' i]",
        )
    )
    for name, page, selector in lexbor_cases:
        tree = LexborHTMLParser(page)
        took = _seconds(lambda tree=tree, selector=selector: tree.css(selector))
        shown = selector if len(selector) < 30 else selector[:14] + "…" + selector[-12:]
        print(f"selectors  lexbor {shown!r:<30} on {name:<28} {took * 1000:10.1f} ms")
    deep = 2_000 if quick else 20_000
    count = 2_000 if quick else 20_000
    ours = [
        (f"{depth} nested divs", nested(depth), ["p div div div div"]),
        (f"{deep:,} nested divs", nested(deep), ["p div div div div", "div div div div div"]),
        (f"{count:,} cards", cards(count), ["main .c3 span", ".c1 > b", "div .x"]),
        (f"{count:,} cards", cards(count), [".c3", "span"]),
    ]
    for name, page, written in ours:
        selectors = parse_ignore_selectors(written)
        parse = _seconds(lambda page=page: LexborHTMLParser(page))
        tree = LexborHTMLParser(page)
        took = _seconds(lambda tree=tree, selectors=selectors: remove_ignored(tree, selectors))
        body = page.encode()
        whole = _seconds(
            lambda body=body, selectors=selectors: extract(
                body, url="http://example.test/", formats=("markdown", "text"), ignore=selectors
            )
        )
        print(
            f"selectors  ours   {', '.join(written)!r:<40} on {name:<20} "
            f"{took * 1000:8.1f} ms (parse {parse * 1000:7.1f} ms, whole extraction "
            f"{whole * 1000:8.1f} ms)"
        )


def diff_cases(quick: bool) -> None:
    size = 5_000 if quick else 50_000
    lines = [f"line {i}\n" for i in range(size)]
    rng = random.Random(1)
    a = "".join(rng.choice(("a\n", "b\n")) for _ in range(size // 2))
    b = "".join(rng.choice(("a\n", "b\n")) for _ in range(size // 2))
    scattered = "".join(f"line {i}\n" + "same\n" * 10 for i in range(size // 50))
    page = "".join(f"Paragraph {i} of an ordinary long page.\n\n" for i in range(size))
    cases = [
        (f"{size:,} lines reversed", "".join(lines), "".join(reversed(lines))),
        (f"{size // 2:,} lines of two kinds", a, b),
        (f"{size // 50:,} edits 10 lines apart", scattered, scattered.replace("line", "LINE")),
        (f"one edit in {size:,} paragraphs", page, page.replace("Paragraph 77 ", "Paragraph 77!")),
    ]
    for name, old, new in cases:
        result = None

        def run(old: str = old, new: str = new) -> None:
            nonlocal result
            result = unified_diff(old, new)

        took = _seconds(run)
        assert result is not None
        print(
            f"diff       {name:<34} {took * 1000:8.1f} ms  coarse={result.coarse!s:<5} "
            f"complete={result.complete!s:<5} {len(result.text):>8,} chars"
        )


def _corpus_pages(path: Path, limit: int) -> Iterator[bytes]:
    with tarfile.open(path) as archive:
        count = 0
        for member in archive:
            if count >= limit:
                return
            handle = archive.extractfile(member) if member.isfile() else None
            if handle is not None:
                count += 1
                yield handle.read()


def content_cases(quick: bool, corpus: Path) -> None:
    if not corpus.exists():
        print(f"content    (no corpus at {corpus}: skipped)")
        return
    contents = []
    for body in _corpus_pages(corpus, 30 if quick else 300):
        extraction = extract(body, url="http://example.test/", formats=("markdown", "text"))
        contents.append(RunContent(extraction.markdown or "", extraction.text or ""))
    frames = [(c.markdown + "\0" + c.text).encode("utf-8", "surrogatepass") for c in contents]
    raw = sum(len(frame) for frame in frames)
    separate = sum(
        len(isal_zlib.compress(c.markdown.encode("utf-8", "surrogatepass"), 2))
        + len(isal_zlib.compress(c.text.encode("utf-8", "surrogatepass"), 2))
        for c in contents
    )
    print(f"content    {len(frames)} corpus pages, Markdown + text {raw / 1e6:.2f} MB")
    compressors: list[tuple[str, Callable[[bytes], bytes]]] = [
        *[
            (f"isal level {level}", lambda d, level=level: isal_zlib.compress(d, level))
            for level in range(4)
        ],
        ("zlib level 6", lambda d: zlib.compress(d, 6)),
    ]
    for name, compress in compressors:
        repeat = 3
        started = time.perf_counter()
        for _ in range(repeat):
            size = sum(len(compress(frame)) for frame in frames)
        took = (time.perf_counter() - started) / repeat
        print(f"content    {name:<14} {size / raw:6.3f} of the size  {raw / took / 1e6:7.1f} MB/s")
    print(f"content    isal level 2, Markdown and text compressed apart: {separate / raw:6.3f}")
    blob_bytes = io.BytesIO()
    for content in contents:
        blob_bytes.write(content.encode())
    print(f"content    RunContent.encode(): {blob_bytes.tell() / raw:6.3f} of the size")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small cases (the smoke test)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="pages.tar.xz of real pages")
    options = parser.parse_args()
    selector_cases(options.quick)
    diff_cases(options.quick)
    content_cases(options.quick, options.corpus)


if __name__ == "__main__":
    main()
