"""Extraction throughput on the corpus pages, one core.

    python bench/bench_extract.py [--seconds 1.0] [--repeat 3]

For each page of tests/corpus/ (and for all of them, round-robin) prints pages/s for metadata only
(what every job pays) and for metadata + Markdown, and, as the ceiling on this machine, for decoding
and parsing alone (lexbor, no Python work on the tree). Each figure is the best of ``--repeat`` runs
of about ``--seconds`` each, so a busy machine shows its quietest moment.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from taskcrawler.extract import extract
from taskcrawler.extract.decode import decode_html

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"
URL = "https://news.example.com/world/2024/03/river-valley-plan"
PARSE_ONLY = ("parse only",)
MODES: dict[str, tuple[str, ...]] = {
    "parse only": PARSE_ONLY,
    "metadata": ("metadata",),
    "+markdown": ("metadata", "markdown"),
}


def _parse_only(body: bytes) -> None:
    LexborHTMLParser(decode_html(body).text)


def _rate(bodies: Sequence[bytes], formats: tuple[str, ...], seconds: float) -> float:
    """Pages per second over about ``seconds``, cycling through ``bodies``."""
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for body in bodies:
            if formats is PARSE_ONLY:
                _parse_only(body)
            else:
                extract(body, url=URL, formats=formats)
        done += len(bodies)
        now = time.perf_counter()
        if now >= deadline:
            return done / (now - start)


def _best(bodies: Sequence[bytes], formats: tuple[str, ...], seconds: float, repeat: int) -> float:
    return max(_rate(bodies, formats, seconds) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is shown")
    args = parser.parse_args()

    pages = {path.name: path.read_bytes() for path in sorted(CORPUS.glob("*.html"))}
    rows = [(name, [body]) for name, body in pages.items()]
    rows.append(("all pages, round-robin", list(pages.values())))

    header = f"{'page':<28} {'KB':>7}" + "".join(f" {mode + ' p/s':>16}" for mode in MODES)
    print(header)
    print("-" * len(header))
    for name, bodies in rows:
        size = sum(len(body) for body in bodies) / len(bodies) / 1024
        rates = [_best(bodies, formats, args.seconds, args.repeat) for formats in MODES.values()]
        print(f"{name:<28} {size:>7.1f}" + "".join(f" {rate:>16,.0f}" for rate in rates))


if __name__ == "__main__":
    main()
