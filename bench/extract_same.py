"""Whether this tree extracts every page exactly as a git ref does.

    python -m bench.extract_same --ref main [--sets bench trafilatura wcxb]

Each page of the sets (those of :mod:`bench.extract_cpu`) is extracted twice per tree: with the
default formats (what a job that names none asks: metadata and Markdown) and with every format
but the page's own HTML. Each tree runs in a process of its own (the ref's ``taskcrawler`` from
``git archive``) and writes a digest of each extraction (sha256 of the ``repr`` of
``dataclasses.asdict``: every field, in order). The pages whose digests differ are listed, and
the exit status is 1 when one does: a change meant to make extraction cheaper, not different,
must leave every digest as it was.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.extract_cpu import SETS, pages_of
from bench.post_cpu import _extract

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FORMATS = ("metadata", "markdown")
EVERY_FORMAT = ("metadata", "markdown", "text", "links", "clean_html", "images")
FORMAT_SETS = {"default": DEFAULT_FORMATS, "every": EVERY_FORMAT}


def digests(sets: list[str]) -> dict[str, str]:
    """``{"set/index/formats": digest}`` for each page of ``sets`` and each format set."""
    from taskcrawler.extract.documents import extract_page

    found: dict[str, str] = {}
    for name in sets:
        for index, (url, body) in enumerate(pages_of(name)):
            for label, formats in FORMAT_SETS.items():
                result = extract_page(body, url=url, formats=formats)
                text = repr(dataclasses.asdict(result)).encode("utf-8", "surrogatepass")
                found[f"{name}/{index}/{label}"] = hashlib.sha256(text).hexdigest()
    return found


def _run(tree: Path | None, sets: list[str]) -> dict[str, str]:
    """The digests of the code in ``tree`` (None: this tree's), in a process of its own."""
    path = str(REPO_ROOT) if tree is None else f"{tree}{os.pathsep}{REPO_ROOT}"
    command = [sys.executable, "-m", "bench.extract_same", "--child", "--sets", *sets]
    # ``python -m`` puts the working directory first on sys.path: the ref's tree, if any.
    out = subprocess.run(
        command,
        env=os.environ | {"PYTHONPATH": path},
        cwd=tree or REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    found: dict[str, str] = json.loads(out.stdout)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="the git ref to compare with")
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(digests(args.sets)))
        return
    with tempfile.TemporaryDirectory() as workdir:
        ref_tree = Path(workdir)
        _extract(args.ref, ref_tree)
        before = _run(ref_tree, args.sets)
    after = _run(None, args.sets)
    keys = before.keys() | after.keys()
    differ = sorted(key for key in keys if before.get(key) != after.get(key))
    for key in differ:
        print(f"differs: {key}")
    print(f"{len(before)} extractions of {args.ref}, {len(after)} here, {len(differ)} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
