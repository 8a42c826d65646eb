"""Cursors and export positions made from their own grammar, as a forger would: valid
encodings whose parts are out of range, not only random strings (which a decoder refuses at
its first byte, so they never reach the fields that overflowed).

* a list cursor is ``base64url("<instant>|<uuid>")``;
* an export ``since`` is ``base64url("v1.<seq>.<32 hex>")``.

Each part is drawn from values at and past its bounds: instants at year 1 and 9999 with
offsets up to a day either way (they overflow once converted to UTC), impossible dates, no
offset; sequences at and past 64 bits, signs, underscores, non-ASCII digits; ids of every length
and spelling.
"""

from __future__ import annotations

import base64
import uuid

from hypothesis import strategies as st

SOME_ID = uuid.UUID("6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f")


def b64(raw: str | bytes, *, padded: bool = False) -> str:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    encoded = base64.urlsafe_b64encode(data).decode()
    return encoded if padded else encoded.rstrip("=")


#: Offsets at the edges of what an ISO instant may carry, and past them.
_OFFSETS = ["+00:00", "+14:00", "-14:00", "+23:59", "-23:59", "+24:00", "-99:99", "Z", ""]
_EDGE_INSTANTS = [
    "0001-01-01T00:00:00",
    "0001-01-01T13:59:59.999999",
    "9999-12-31T23:59:59.999999",
    "9999-12-31T10:00:00",
    "1970-01-01T00:00:00",
    "2024-02-30T00:00:00",  # no such day
    "2024-13-01T00:00:00",
    "0000-01-01T00:00:00",
    "10000-01-01T00:00:00",
    "2024-01-01T24:00:00",
    "2024-01-01 00:00:00",
    "2024-01-01T00:00:00.9999999",
    "-0001-01-01T00:00:00",
]
ID_SPELLINGS = [
    str(SOME_ID),
    str(SOME_ID).upper(),
    "{" + str(SOME_ID) + "}",
    "urn:uuid:" + str(SOME_ID),
    SOME_ID.hex,
    SOME_ID.hex[:31],
    SOME_ID.hex + "0",
    str(SOME_ID)[:35],
    str(SOME_ID) + "0",
    str(uuid.UUID(int=0)),
    str(uuid.UUID(int=2**128 - 1)),
    "",
    "not-an-id",
    "1",
    "\x00" * 36,
]

_instants = st.builds(
    lambda moment, offset: moment + offset,
    st.sampled_from(_EDGE_INSTANTS)
    | st.datetimes().map(lambda d: d.isoformat())
    | st.text(alphabet="0123456789-:T.+", max_size=40),
    st.sampled_from(_OFFSETS)
    | st.integers(-99 * 60, 99 * 60).map(
        lambda m: f"{'+-'[m < 0]}{abs(m) // 60:02}:{abs(m) % 60:02}"
    ),
)
_ids = (
    st.sampled_from(ID_SPELLINGS)
    | st.uuids().map(str)
    | st.text(alphabet="0123456789abcdefABCDEF-{}", max_size=70)
)


def list_cursors() -> st.SearchStrategy[str]:
    """Encodings of ``<instant>|<id>`` with hostile parts, and a few with a hostile frame
    (padding, the standard alphabet, more separators, a longer payload than any made)."""
    raw = st.builds(
        lambda instant, sep, row: f"{instant}{sep}{row}",
        _instants,
        st.sampled_from(["|", "|", "|", "||", "", ",", "|\x00"]),
        _ids,
    )
    framed = st.builds(lambda text, padded: b64(text, padded=padded), raw, st.booleans())
    odd_frames = st.builds(
        lambda text: base64.standard_b64encode(text.encode()).decode(), raw
    ) | raw.map(lambda text: b64(text * 20))
    return framed | odd_frames


def export_positions() -> st.SearchStrategy[str]:
    """Encodings of ``<version>.<seq>.<hex>`` with hostile parts."""
    seqs = st.sampled_from(
        [
            "0",
            str(2**63 - 1),
            str(2**63),
            str(2**64),
            str(10**30),
            "9" * 5000,
            "-1",
            "+1",
            "1_000",
            " 1",
            "01",
            "\u0663",  # ARABIC-INDIC DIGIT THREE: int() reads it
            "",
            "1e3",
        ]
    ) | st.integers(-(2**70), 2**70).map(str)
    hexes = st.sampled_from(
        [
            SOME_ID.hex,
            SOME_ID.hex.upper(),
            SOME_ID.hex[:31],
            SOME_ID.hex + "00",
            str(SOME_ID),
            "",
            "g" * 32,
        ]
    ) | st.text(alphabet="0123456789abcdef", max_size=70)
    versions = st.sampled_from(["v1", "v1", "v2", "V1", "", "v1.v1"])
    return st.builds(
        lambda version, seq, hexed, padded: b64(f"{version}.{seq}.{hexed}", padded=padded),
        versions,
        seqs,
        hexes,
        st.booleans(),
    )


#: Values every cursor surface always gets: the forgeries that answered 500 (issue 31).
EXPLICIT_LIST_CURSORS = [
    b64(f"0001-01-01T00:00:00+14:00|{SOME_ID}"),
    b64(f"9999-12-31T23:59:59.999999-14:00|{SOME_ID}"),
    b64(f"9999-12-31T23:59:59.999999-23:59|{SOME_ID}"),
    b64(f"2024-01-01T00:00:00+00:00|{{{SOME_ID}}}"),
    b64(f"2024-01-01T00:00:00|{SOME_ID}"),
    b64(f"2024-01-01T00:00:00+00:00|{SOME_ID}") + "\x00",
]
EXPLICIT_EXPORT_POSITIONS = [
    b64(f"v1.{2**63}.{SOME_ID.hex}"),
    b64(f"v1.{2**64}.{SOME_ID.hex}"),
    b64(f"v1.{'9' * 5000}.{SOME_ID.hex}")[:100],
    b64(f"v1.-1.{SOME_ID.hex}"),
    b64(f"v1.1.{SOME_ID.hex[:31]}"),
]


def cursors() -> st.SearchStrategy[str]:
    """Either kind: each cursor surface gets the other's too (a ``since`` given as a page's
    cursor is a forgery like any other)."""
    return list_cursors() | export_positions()


EXPLICIT_CURSORS = EXPLICIT_LIST_CURSORS + EXPLICIT_EXPORT_POSITIONS
