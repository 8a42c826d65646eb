"""Which library reads PDFs for TaskCrawler: ``python -m bench.pdf_extractors``.

PDFs with known text are printed by Debian's chromium from HTML made here (an article with
headings, a table, two columns) and from three pages of the test corpus (an English news page,
Japanese, Arabic). Each candidate reads each PDF three times; printed per library: pages per
second over all of them, and per PDF the token F1 of its text against the known text, and the
milliseconds one read took. The candidates are the permissively licensed ones (PyMuPDF is
AGPL): PDFium (``pypdfium2``, the runtime dependency), ``pypdf`` and ``pdfminer.six`` (both in
the bench extra).
"""

from __future__ import annotations

import html
import io
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"
CORPUS_PAGES = ("news_article", "japanese_utf8", "arabic_rtl")
RUNS = 3
_VOCABULARY = (
    "the quick brown fox jumps over lazy dog crawler service worker queue page archive "
    "extract markdown text document heading table column river mountain history science "
    "energy market policy"
)
WORDS = tuple(_VOCABULARY.split(" "))


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def made_documents() -> dict[str, tuple[str, str]]:
    """name -> (HTML, the text it shows)."""
    rng = random.Random(7)
    article, truth = "", ["Annual Report"]
    for section in range(6):
        heading = f"Section {section + 1}: {_sentence(rng, 3)[:-1]}"
        article += f"<h2>{html.escape(heading)}</h2>"
        truth.append(heading)
        for _ in range(4):
            paragraph = _sentence(rng, 60)
            article += f"<p>{paragraph}</p>"
            truth.append(paragraph)
    rows = [[f"Item {i}", str(rng.randint(1, 999)), rng.choice(WORDS)] for i in range(40)]
    cells = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    table = f"<table border=1><tr><th>Name</th><th>Count</th><th>Kind</th></tr>{cells}</table>"
    columns = [_sentence(rng, 80) for _ in range(6)]
    flowing = "".join(f"<p>{c}</p>" for c in columns)
    return {
        "article": (f"<h1>Annual Report</h1>{article}", " ".join(truth)),
        "table": (
            f"<h1>Inventory</h1>{table}",
            " ".join(["Inventory", "Name Count Kind", *(" ".join(r) for r in rows)]),
        ),
        "columns": (
            f"<h1>Two Columns</h1><div style='column-count:2'>{flowing}</div>",
            " ".join(["Two Columns", *columns]),
        ),
    }


def corpus_documents() -> dict[str, tuple[str, str]]:
    found = {}
    for name in CORPUS_PAGES:
        markup = (CORPUS / f"{name}.html").read_text(encoding="utf-8", errors="replace")
        tree = LexborHTMLParser(markup)
        for node in tree.css("script, style, head"):
            node.decompose()
        found[name] = (markup, tree.body.text(separator=" ") if tree.body else "")
    return found


def print_pdfs(folder: Path, documents: dict[str, tuple[str, str]]) -> dict[str, Path]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Debian's chromium to print the PDFs")
    printed = {}
    for name, (markup, _) in documents.items():
        page = folder / f"{name}.html"
        page.write_text(f"<html><body>{markup}</body></html>", encoding="utf-8")
        pdf = folder / f"{name}.pdf"
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
             f"--print-to-pdf={pdf}", page.as_uri()],
            check=True,
            capture_output=True,
        )  # fmt: skip
        printed[name] = pdf
    return printed


def _tokens(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def token_f1(found: str, truth: str) -> float:
    got, want = _tokens(found), _tokens(truth)
    common = sum((got & want).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def with_pdfium(data: bytes) -> str:
    from taskcrawler.extract.pdf import extract_pdf

    return extract_pdf(data, url="bench://", formats=("text",)).text or ""


def with_pypdf(data: bytes) -> str:
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    return "\n".join(page.extract_text() or "" for page in reader.pages)


def with_pdfminer(data: bytes) -> str:
    from pdfminer.high_level import extract_text

    return str(extract_text(io.BytesIO(data)))


CANDIDATES: dict[str, Callable[[bytes], str]] = {
    "pypdfium2 (TaskCrawler's extract_pdf)": with_pdfium,
    "pypdf": with_pypdf,
    "pdfminer.six": with_pdfminer,
}


def main() -> None:
    import pypdfium2

    documents = {**made_documents(), **corpus_documents()}
    with tempfile.TemporaryDirectory() as folder:
        pdfs = {
            name: path.read_bytes() for name, path in print_pdfs(Path(folder), documents).items()
        }
    pages = sum(len(pypdfium2.PdfDocument(data)) for data in pdfs.values())
    for library, read in CANDIDATES.items():
        total, scores = 0.0, []
        for name, data in pdfs.items():
            read(data)  # imports, caches
            started = time.perf_counter()
            for _ in range(RUNS):
                text = read(data)
            elapsed = (time.perf_counter() - started) / RUNS
            total += elapsed
            scores.append(
                f"{name} F1 {token_f1(text, documents[name][1]):.2f} {elapsed * 1000:.0f} ms"
            )
        print(f"{library}: {pages / total:.0f} pages/s; " + "; ".join(scores))


if __name__ == "__main__":
    main()
