"""Small PDFs made on the spot, with known text: a title set large, then lines of body text,
page after page. Enough of the format for PDFium (and any reader) to read them back."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

_TITLE_SIZE = 24
_BODY_SIZE = 12
_LEADING = 16


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _page_stream(title: str | None, lines: Sequence[str]) -> bytes:
    parts = []
    if title:
        parts.append(f"BT /F1 {_TITLE_SIZE} Tf 72 720 Td ({_escaped(title)}) Tj ET")
    body = " ".join(f"({_escaped(line)}) Tj T*" for line in lines)
    parts.append(f"BT /F1 {_BODY_SIZE} Tf {_LEADING} TL 72 680 Td {body} ET")
    return "\n".join(parts).encode("latin-1")


def _pdf_file(objects: Sequence[bytes], *, info_id: int | None = None) -> bytes:
    """``objects`` numbered from 1, with their cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    info = "" if info_id is None else f" /Info {info_id} 0 R"
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def pdf_of_one_stream(pages: int, line: str, lines_per_page: int) -> bytes:
    """A PDF of ``pages`` pages that all draw the same compressed content stream: the line
    ``line`` ``lines_per_page`` times. A few kilobytes that read as ``pages`` times as much
    text, the shape of a text bomb."""
    rows = " ".join([f"({_escaped(line)}) Tj T*"] * lines_per_page)
    stream = zlib.compress(f"BT /F1 2 Tf 2 TL 10 780 Td {rows} ET".encode("latin-1"), 9)
    kids = " ".join(f"{5 + index} 0 R" for index in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode()
        + stream
        + b"\nendstream",
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 3 0 R >> >> >>"
    )
    return _pdf_file([*objects, *[page] * pages])


def pdf_document(
    title: str,
    pages: Sequence[Sequence[str]],
    *,
    info_title: str = "",
    info: Mapping[str, str] | None = None,
) -> bytes:
    """A PDF whose first page starts with ``title`` (24 pt) and whose pages hold ``pages``'
    lines (12 pt); ``info_title``: the document's declared title, ``info`` more of its
    document information (``Subject``, ``Author``)."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * index for index in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for index, lines in enumerate(pages):
        stream = _page_stream(title if index == 0 else None, lines)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {page_ids[index] + 1}"
            " 0 R /Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    info_id = len(objects) + 1
    fields = {"Title": info_title, **(info or {})}
    entries = " ".join(f"/{name} ({_escaped(value)})" for name, value in fields.items())
    objects.append(f"<< {entries} >>".encode())
    return _pdf_file(objects, info_id=info_id)
