"""Main content of non-article pages (WCXB's development split): ``python -m bench.wcxb_quality``.

    python -m bench.wcxb_quality [--corpus DIR] [--formats text markdown] [--split tune]
                                 [--digests FILE] [--same-as FILE]

The corpus (627 forum, product, collection, listing, documentation and service pages, each with
the main content a person marked on it) lives outside the repository:
``$TASKCRAWLER_WCXB_CORPUS``, else ``shared/corpora/wcxb-dev`` beside the repository or one of
its parents; it is read from its ``pages.tar.xz`` in memory. Scoring is WCXB's own (see the
corpus's README): the output's and the truth's words, lower-cased (``\\w+``), compared as bags;
F1 per page, averaged over each kind of page and over all. CPU ms per page counts the
extraction call alone (the thread's clock), metadata included, as a worker runs it.

The pages are split by a hash of their URL as ``bench.extract_quality`` splits its corpus (one
in five held out); tune on ``tune``. ``--digests FILE`` writes a digest of every page's output,
``--same-as FILE`` names the pages whose output differs from such a file: a change meant to
make extraction cheaper without changing what it finds should name none.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tarfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from bench.extract_quality import REPO_ROOT, SPLITS, in_split

CORPUS_ENV = "TASKCRAWLER_WCXB_CORPUS"
CORPUS_PARTS = ("shared", "corpora", "wcxb-dev")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Page:
    id: str
    kind: str
    url: str
    body: bytes
    truth: str


def find_corpus() -> Path | None:
    configured = os.environ.get(CORPUS_ENV)
    candidates = (
        [Path(configured)]
        if configured
        else [parent.joinpath(*CORPUS_PARTS) for parent in REPO_ROOT.parents]
    )
    for candidate in candidates:
        if (candidate / "index.jsonl").is_file() and (candidate / "pages.tar.xz").is_file():
            return candidate
    return None


def load_pages(corpus: Path, split: str) -> list[Page]:
    index = [json.loads(line) for line in (corpus / "index.jsonl").read_text().splitlines()]
    files: dict[str, bytes] = {}
    with tarfile.open(corpus / "pages.tar.xz", "r:xz") as archive:
        for member in archive:
            handle = archive.extractfile(member) if member.isfile() else None
            if handle is not None:
                files[member.name.rsplit("/", 2)[-2] + "/" + member.name.rsplit("/", 1)[-1]] = (
                    handle.read()
                )
    return [
        Page(
            entry["id"],
            entry["page_type"],
            entry["url"],
            files[f"pages/{entry['id']}.html"],
            files[f"truth/{entry['id']}.txt"].decode("utf-8", "replace"),
        )
        for entry in index
        if in_split(entry["url"], split)
    ]


def f1(output: str | None, truth: str) -> float:
    """WCXB's word-bag F1 (an empty output scores 0)."""
    found = Counter(_WORD.findall((output or "").lower()))
    wanted = Counter(_WORD.findall(truth.lower()))
    shared = sum((found & wanted).values())
    if not shared:
        return 0.0
    precision, recall = shared / sum(found.values()), shared / sum(wanted.values())
    return 2 * precision * recall / (precision + recall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help=f"default: ${CORPUS_ENV} or shared/corpora")
    parser.add_argument("--formats", nargs="+", choices=["text", "markdown"], default=["text"])
    parser.add_argument("--split", choices=SPLITS, default="tune", help="default: tune")
    parser.add_argument("--digests", type=Path, help="write each page's output digest here")
    parser.add_argument("--same-as", type=Path, help="name the pages whose output differs")
    args = parser.parse_args()
    corpus = args.corpus or find_corpus()
    if corpus is None:
        sys.exit(f"no corpus: set ${CORPUS_ENV} or put it in shared/corpora/wcxb-dev")

    from taskcrawler.extract import extract

    pages = load_pages(corpus, args.split)
    scores: dict[str, dict[str, list[float]]] = {fmt: defaultdict(list) for fmt in args.formats}
    digests: dict[str, str] = {}
    seconds = 0.0
    for page in pages:
        started = time.thread_time()
        result = extract(page.body, url=page.url, formats=("metadata", *args.formats))
        seconds += time.thread_time() - started
        for fmt in args.formats:
            output = result.markdown if fmt == "markdown" else result.text
            scores[fmt][page.kind].append(f1(output, page.truth))
            digest = hashlib.sha256((output or "").encode()).hexdigest()[:16]
            digests[f"{page.id} {fmt}"] = digest
        meta = json.dumps(result.metadata, sort_keys=True, default=str).encode()
        digests[f"{page.id} metadata"] = hashlib.sha256(meta).hexdigest()[:16]
    kinds = sorted({page.kind for page in pages})
    print(f"corpus: {corpus}, {len(pages)} pages ({args.split})")
    per_page = 1000 * seconds / len(pages)
    print("| format | " + " | ".join(kinds) + " | all | CPU ms a page (all formats) |")
    print("| --- |" + " ---: |" * (len(kinds) + 2))
    for fmt, by_kind in scores.items():
        every = [score for kind in kinds for score in by_kind[kind]]
        cells = [f"{sum(by_kind[k]) / len(by_kind[k]):.3f}" for k in kinds]
        mean = sum(every) / len(every)
        print(f"| {fmt} | " + " | ".join(cells) + f" | {mean:.3f} | {per_page:.2f} |")
    if args.digests is not None:
        args.digests.write_text(json.dumps(digests, indent=0, sort_keys=True))
    if args.same_as is not None:
        before = json.loads(args.same_as.read_text())
        changed = sorted(key for key, digest in digests.items() if before.get(key) != digest)
        print(f"outputs differing from {args.same_as}: {len(changed)}", *changed[:20], sep="\n  ")


if __name__ == "__main__":
    main()
