"""Main-content quality on the trafilatura evaluation corpus: ours against trafilatura, one run.

    python -m bench.extract_quality [--corpus DIR] [--extractors ours trafilatura]
                                    [--formats text markdown] [--split all] [--misses N]

The corpus (990 real pages and, for each, snippets that a main-content extractor must keep or must
drop) lives outside the repository: ``$TASKCRAWLER_EXTRACT_CORPUS``, else
``shared/corpora/trafilatura-eval`` beside the repository or one of its parents. It is read from
its ``pages.tar.xz`` in memory; nothing of it is written anywhere.

Scoring is the corpus's own: the output, whitespace collapsed, is searched for every snippet (also
collapsed); a kept ``with`` snippet is a true positive, a kept ``without`` one a false positive.
Precision, recall and F1 are over all snippets of all pages together. Pages/s is on one core and
counts the CPU time of the extraction call alone (the thread's CPU clock, so that other work on a
shared machine does not count); ours includes the metadata (``formats=("metadata", fmt)``).
Pages are visited once, and every extractor runs on a page before the next page, so a busy moment
of the machine (caches, frequency) weighs on all of them alike. That also lets each run meet the
CPU's caches as the run before it left them, and our second format meet the page's class names
already judged by our first: ``--isolated`` times each extractor and format in a fresh process
of its own instead, one after the other, as a worker runs one extractor (the scores are the same).

The corpus is split by a hash of each page's URL into a tuning part (80%) and a held-out part
(20%), the same on every machine; rules are tuned on the first and checked on the second.

``--markdown-visible`` adds, for information only, rows ``markdown-visible``: every
extractor's Markdown (the same output, not run again) scored after a CommonMark parser
(markdown-it-py, with GFM tables and strikethrough) has turned it into the text a reader sees
(link labels kept, URLs, images and emphasis markers gone, escapes resolved). The corpus's
README scores the output verbatim, so the ``markdown`` rows stay the figure to compare.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import sys
import tarfile
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS_ENV = "TASKCRAWLER_EXTRACT_CORPUS"
CORPUS_PARTS = ("shared", "corpora", "trafilatura-eval")
REPO_ROOT = Path(__file__).resolve().parent.parent
HELD_OUT_SHARE = 5  # one page in five
SPLITS = ("tune", "held-out", "all")
_SPACES = re.compile(r"\s+")


def corpus_candidates(repo_root: Path = REPO_ROOT) -> list[Path]:
    """Where the corpus may sit: the environment's choice, else ``shared/corpora/...`` beside
    the repository (a checkout in ``/work/main`` has ``/work/shared``) or beside a parent of it
    (a worktree in ``/work/wt/NAME``)."""
    configured = os.environ.get(CORPUS_ENV)
    if configured:
        return [Path(configured)]
    return [parent.joinpath(*CORPUS_PARTS) for parent in repo_root.parents]


def find_corpus(repo_root: Path = REPO_ROOT) -> Path | None:
    for candidate in corpus_candidates(repo_root):
        if (candidate / "evaldata.json").is_file() and (candidate / "pages.tar.xz").is_file():
            return candidate
    return None


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    file: str
    body: bytes
    keep: tuple[str, ...]  # "with": must be in the output
    drop: tuple[str, ...]  # "without": must not be
    annotations: dict[str, Any]

    @property
    def held_out(self) -> bool:
        return is_held_out(self.url)


def is_held_out(url: str) -> bool:
    return int(hashlib.sha256(url.encode()).hexdigest()[:8], 16) % HELD_OUT_SHARE == 0


def in_split(url: str, split: str) -> bool:
    return split == "all" or (split == "held-out") == is_held_out(url)


def read_bodies(corpus: Path, wanted: set[str] | None = None) -> dict[str, bytes]:
    """``pages/<file>`` members of the archive, by file name (all, or only ``wanted``)."""
    bodies: dict[str, bytes] = {}
    with tarfile.open(corpus / "pages.tar.xz", "r:xz") as archive:
        for member in archive:
            if not member.isfile():
                continue
            name = member.name.removeprefix("pages/")
            if wanted is not None and name not in wanted:
                continue
            handle = archive.extractfile(member)
            if handle is not None:
                bodies[name] = handle.read()
            if wanted is not None and len(bodies) == len(wanted):
                break  # the rest of the stream need not be decompressed
    return bodies


def load_pages(corpus: Path, urls: Collection[str] | None = None) -> list[Page]:
    """The corpus's pages in its own order (or those of ``urls``), with their snippets."""
    annotations: dict[str, dict[str, Any]] = json.loads((corpus / "evaldata.json").read_bytes())
    if urls is not None:
        chosen = set(urls)
        annotations = {url: item for url, item in annotations.items() if url in chosen}
    bodies = read_bodies(corpus, {item["file"] for item in annotations.values()})
    return [
        Page(
            url=url,
            file=item["file"],
            body=bodies[item["file"]],
            keep=tuple(item["with"]),
            drop=tuple(item["without"]),
            annotations=item,
        )
        for url, item in annotations.items()
        if item["file"] in bodies
    ]


def normalize(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


@dataclass(slots=True)
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    pages: int = 0
    seconds: float = 0.0

    def add(self, page: Page, output: str | None, seconds: float) -> tuple[list[str], list[str]]:
        """Count one page; returns the snippets it missed and the ones it wrongly kept."""
        found = normalize(output or "")
        missed = [s for s in page.keep if normalize(s) not in found]
        kept = [s for s in page.drop if normalize(s) in found]
        self.tp += len(page.keep) - len(missed)
        self.fn += len(missed)
        self.fp += len(kept)
        self.tn += len(page.drop) - len(kept)
        self.pages += 1
        self.seconds += seconds
        return missed, kept

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        denominator = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denominator if denominator else 0.0

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0


Extractor = Callable[[Page], str | None]


def ours(fmt: str) -> Extractor:
    from taskcrawler.extract import extract

    formats = ("metadata", fmt)

    def run(page: Page) -> str | None:
        result = extract(page.body, url=page.url, formats=formats)
        return result.text if fmt == "text" else result.markdown

    return run


def trafilatura(fmt: str) -> Extractor:
    """trafilatura's ``extract()`` as its own evaluation runs it (tables in, comments out)."""
    import trafilatura as lib

    options: dict[str, Any] = {
        "include_comments": False,
        "include_tables": True,
        "output_format": "txt" if fmt == "text" else "markdown",
    }

    def run(page: Page) -> str | None:
        return lib.extract(page.body, url=page.url, **options)  # type: ignore[no-any-return]

    return run


EXTRACTORS: dict[str, Callable[[str], Extractor]] = {"ours": ours, "trafilatura": trafilatura}


_HTML_TAG = re.compile(r"<[^>]*>")


def visible_text(markdown: str) -> str:
    """What a reader sees of ``markdown`` once rendered: the text of every block on its own
    line, link labels without their URLs, no images, no emphasis markers, escapes resolved,
    raw HTML without its tags, code as written."""
    lines: list[str] = []
    for token in _markdown_parser().parse(markdown):
        if token.type == "inline":
            parts = []
            for child in token.children or ():
                if child.type in ("text", "code_inline"):
                    parts.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    parts.append("\n")
            lines.append("".join(parts))
        elif token.type in ("fence", "code_block"):
            lines.append(token.content)
        elif token.type == "html_block":
            lines.append(_HTML_TAG.sub(" ", token.content))
    return "\n".join(lines)


_PARSER: list[Any] = []


def _markdown_parser() -> Any:
    if not _PARSER:
        from markdown_it import MarkdownIt

        _PARSER.append(MarkdownIt("commonmark").enable(["table", "strikethrough"]))
    return _PARSER[0]


@dataclass(slots=True)
class Run:
    """One extractor in one format, scored per split (and, for Markdown when asked, scored
    again on its visible text: ``visible``)."""

    name: str
    fmt: str
    extractor: Extractor
    scores: dict[str, Score] = field(default_factory=lambda: {s: Score() for s in SPLITS})
    misses: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    visible: dict[str, Score] | None = None

    def score(self, page: Page) -> None:
        self.record(page, *timed(self.extractor, page, f"{self.name} {self.fmt}"))

    def record(self, page: Page, output: str | None, seconds: float) -> None:
        missed: list[str] = []
        kept: list[str] = []
        seen = visible_text(output) if self.visible is not None and output else output
        for split in SPLITS:
            if in_split(page.url, split):
                missed, kept = self.scores[split].add(page, output, seconds)
                if self.visible is not None:
                    self.visible[split].add(page, seen, seconds)
        if missed or kept:
            self.misses.append((page.file, missed, kept))


def timed(extractor: Extractor, page: Page, label: str) -> tuple[str | None, float]:
    """The extractor's output on ``page`` and the CPU seconds of the call."""
    start = time.thread_time()
    try:
        output = extractor(page)
    except Exception as exc:  # a crash is a full miss, as it would be in production
        print(f"{label} failed on {page.file}: {exc!r}", file=sys.stderr)
        output = None
    return output, time.thread_time() - start


def isolated_pass(corpus: Path, split: str, name: str, fmt: str) -> list[tuple[str | None, float]]:
    """In a process of its own: one extractor in one format over the pages, each output with
    its CPU seconds (the first page once more beforehand, untimed: imports and set-up)."""
    pin_to_one_core()
    pages = [page for page in load_pages(corpus) if in_split(page.url, split)]
    extractor = EXTRACTORS[name](fmt)
    extractor(pages[0])
    return [timed(extractor, page, f"{name} {fmt}") for page in pages]


def score_isolated(corpus: Path, split: str, pages: list[Page], runs: list[Run]) -> None:
    """Each run in a fresh process, one after the other: no extractor's caches (its own from
    another format on the same page, the CPU's from another extractor) help or hinder another."""
    context = multiprocessing.get_context("spawn")
    for run in runs:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            results = pool.submit(isolated_pass, corpus, split, run.name, run.fmt).result()
        for page, (output, seconds) in zip(pages, results, strict=True):
            run.record(page, output, seconds)


def pin_to_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def score_corpus(pages: list[Page], runs: list[Run]) -> None:
    for run in runs:  # imports and one-time set-up out of the timing
        run.extractor(pages[0])
    for page in pages:
        for run in runs:
            run.score(page)


def table(runs: list[Run], splits: Collection[str] | None = None) -> Iterator[str]:
    yield "| extractor | format | split | pages | precision | recall | F1 | pages/s |"
    yield "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
    for split in splits or SPLITS:
        for run in runs:
            s = run.scores[split]
            yield (
                f"| {run.name} | {run.fmt} | {split} | {s.pages} | {s.precision:.3f} "
                f"| {s.recall:.3f} | {s.f1:.3f} | {s.pages_per_second:.0f} |"
            )
        for run in runs:
            if run.visible is not None:
                s = run.visible[split]
                yield (
                    f"| {run.name} | {run.fmt}-visible | {split} | {s.pages} | {s.precision:.3f} "
                    f"| {s.recall:.3f} | {s.f1:.3f} | (the {run.fmt} run's) |"
                )


_FIELDS = (("author", "author"), ("date", "published_date"), ("sitename", "site_name"))


def _same(field: str, expected: str, found: str | None) -> bool:
    if field == "date":
        return (found or "")[:10] == expected
    return normalize(found or "").casefold() == normalize(expected).casefold()


def metadata_table(pages: list[Page]) -> Iterator[str]:
    """Our author, date and site name against the corpus's annotations, where it has them:
    how often the annotated value is found (a page annotated empty is not counted)."""
    from taskcrawler.extract import extract

    counts = {field: [0, 0] for field, _ in _FIELDS}
    for page in pages:
        metadata = extract(page.body, url=page.url).metadata
        for name, key in _FIELDS:
            expected = page.annotations.get(name)
            if isinstance(expected, list):  # a few pages list several authors
                expected = "; ".join(expected)
            if expected:
                counts[name][1] += 1
                counts[name][0] += _same(name, expected, metadata.get(key))
    yield "| field | annotated pages | ours equal | share |"
    yield "| --- | ---: | ---: | ---: |"
    for name, (equal, total) in counts.items():
        yield f"| {name} | {total} | {equal} | {equal / total if total else 0:.3f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help=f"default: ${CORPUS_ENV} or shared/corpora")
    parser.add_argument("--extractors", nargs="+", choices=list(EXTRACTORS), default=["ours"])
    parser.add_argument("--formats", nargs="+", choices=["text", "markdown"], default=["text"])
    parser.add_argument("--split", choices=SPLITS, default="all", help="which pages to run")
    parser.add_argument("--misses", type=int, default=0, help="print the first N pages' misses")
    parser.add_argument(
        "--metadata", action="store_true", help="also check author, date, site name"
    )
    parser.add_argument(
        "--markdown-visible",
        action="store_true",
        help="also score each Markdown output's visible text (information, not the corpus's "
        "own scoring)",
    )
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="time each extractor and format in a process of its own, one after the other, "
        "instead of all of them page by page in this one",
    )
    args = parser.parse_args()

    corpus = args.corpus or find_corpus()
    if corpus is None:
        sys.exit(f"corpus not found; looked in {[str(p) for p in corpus_candidates()]}")
    pages = [page for page in load_pages(corpus) if in_split(page.url, args.split)]
    runs = [
        Run(name, fmt, EXTRACTORS[name](fmt)) for fmt in args.formats for name in args.extractors
    ]
    if args.markdown_visible:
        for run in runs:
            if run.fmt == "markdown":
                run.visible = {split: Score() for split in SPLITS}
    if args.isolated:
        score_isolated(corpus, args.split, pages, runs)
    else:
        pin_to_one_core()
        score_corpus(pages, runs)
    for run in runs:
        for file, missed, kept in run.misses[: args.misses]:
            print(f"{run.name} {run.fmt} {file}: missed {missed} kept {kept}")
    print(f"corpus: {corpus}, {len(pages)} pages")
    for line in table(runs, [args.split] if args.split != "all" else None):
        print(line)
    if args.metadata:
        for line in metadata_table(pages):
            print(line)


if __name__ == "__main__":
    main()
