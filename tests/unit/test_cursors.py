"""The one decoder of cursors and export positions: what it makes it reads back, anything
else (a forgery built from its own grammar included) is InvalidCursor, never another error."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskcrawler.domain.cursors import (
    MAX_EXPORT_SEQ,
    decode_export_cursor,
    decode_list_cursor,
    encode_export_cursor,
    encode_list_cursor,
)
from taskcrawler.domain.errors import InvalidCursor
from taskcrawler.domain.exports import ExportPosition
from tests.support.cursors import (
    EXPLICIT_EXPORT_POSITIONS,
    EXPLICIT_LIST_CURSORS,
    SOME_ID,
    b64,
    cursors,
)
from tests.support.fuzzing import fuzz_settings

_zones = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


@given(instant=st.datetimes(timezones=st.just(UTC)), row_id=st.uuids())
def test_a_list_cursor_reads_back_as_made(instant: datetime, row_id: uuid.UUID) -> None:
    position = decode_list_cursor(encode_list_cursor(instant, row_id))
    assert (position.instant, position.row_id) == (instant, row_id)
    assert position.instant.tzinfo is UTC


@given(instant=st.datetimes(), zone=_zones)
def test_an_instant_of_any_offset_is_one_in_utc_or_refused(
    instant: datetime, zone: timezone
) -> None:
    cursor = b64(f"{instant.replace(tzinfo=zone).isoformat()}|{SOME_ID}")
    try:
        position = decode_list_cursor(cursor)
    except InvalidCursor:
        # Only the instants that have no UTC date: within a day of year 1's start or 9999's end.
        assert instant.year in (1, 9999)
        return
    assert position.instant == instant.replace(tzinfo=zone)
    assert position.instant.utcoffset() == timedelta(0)


@pytest.mark.parametrize("cursor", EXPLICIT_LIST_CURSORS)
def test_the_forgeries_that_answered_500_are_refused(cursor: str) -> None:
    with pytest.raises(InvalidCursor) as refused:
        decode_list_cursor(cursor, "cursor")
    assert refused.value.parameter == "cursor"


@fuzz_settings(300)
@given(cursor=cursors() | st.text(max_size=300))
def test_whatever_a_cursor_holds_it_is_a_position_or_invalid(cursor: str) -> None:
    for decode in (decode_list_cursor, decode_export_cursor):
        try:
            position = decode(cursor)
        except InvalidCursor:
            continue
        if isinstance(position, ExportPosition):
            assert 0 <= position.seq <= MAX_EXPORT_SEQ
            assert decode_export_cursor(encode_export_cursor(position)) == position
        else:
            assert position.instant.tzinfo is UTC
            again = decode_list_cursor(encode_list_cursor(position.instant, position.row_id))
            assert again == position


def test_an_export_position_is_bounded_by_its_64_bit_column() -> None:
    last = ExportPosition(MAX_EXPORT_SEQ, SOME_ID)
    assert decode_export_cursor(encode_export_cursor(last)) == last
    for cursor in EXPLICIT_EXPORT_POSITIONS:
        with pytest.raises(InvalidCursor) as refused:
            decode_export_cursor(cursor)
        assert refused.value.parameter == "since"
    for spelling in (str(SOME_ID), SOME_ID.hex.upper(), "{" + SOME_ID.hex + "}"):
        with pytest.raises(InvalidCursor):
            decode_export_cursor(b64(f"v1.1.{spelling}"))
    for seq in ("+1", "1_0", "\u0663", "01", " 1"):
        with pytest.raises(InvalidCursor):
            decode_export_cursor(b64(f"v1.{seq}.{SOME_ID.hex}"))


def test_a_list_cursor_takes_the_ids_one_spelling() -> None:
    for spelling in ("{" + str(SOME_ID) + "}", "urn:uuid:" + str(SOME_ID), SOME_ID.hex):
        with pytest.raises(InvalidCursor):
            decode_list_cursor(b64(f"2024-01-01T00:00:00+00:00|{spelling}"))
    assert decode_list_cursor(b64(f"2024-01-01T00:00:00+00:00|{SOME_ID}")).row_id == SOME_ID
