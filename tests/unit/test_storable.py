"""What the web sends is made storable before it becomes an outcome (domain.storable)."""

import math
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskcrawler.domain import ClaimedJob, ErrorCode, Outcome
from taskcrawler.domain.pages import FetchedPage, Link, PageContent
from taskcrawler.domain.storable import (
    MAX_CHARSET_CHARS,
    MAX_CONTENT_TYPE_CHARS,
    MAX_ERROR_CODE_CHARS,
    MAX_ERROR_MESSAGE_CHARS,
    MAX_JSON_DEPTH,
    MAX_REL_CHARS,
    REPLACEMENT,
    storable_content,
    storable_json,
    storable_outcome,
    storable_text,
    unstorable,
)
from taskcrawler.storage.tables import job_links, jobs, page_archive
from tests.support.hostile_values import clean_text, hostile_json, hostile_text

SETTINGS = settings(max_examples=400, deadline=None)
JOB = ClaimedJob(uuid.uuid4(), "http://x.test/", 0, uuid.uuid4())


def is_storable(text: str) -> bool:
    """What both databases take: no NUL, and encodable as UTF-8 (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *strings_in(item)]]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    return []


@SETTINGS
@given(hostile_text)
def test_text_keeps_every_character_but_those_refused(text: str) -> None:
    cleaned = storable_text(text)
    assert is_storable(cleaned)
    assert len(cleaned) == len(text)
    for before, after in zip(text, cleaned, strict=True):
        assert after == (before if is_storable(before) else REPLACEMENT)
    assert storable_text(cleaned) == cleaned


@SETTINGS
@given(clean_text)
def test_clean_text_is_returned_as_it_is(text: str) -> None:
    assert storable_text(text) is text


@SETTINGS
@given(hostile_text, st.integers(min_value=0, max_value=50))
def test_text_is_cut_to_its_column(text: str, width: int) -> None:
    assert len(storable_text(text, width)) == min(len(text), width)


@SETTINGS
@given(hostile_json)
def test_json_becomes_what_orjson_writes_without_a_nul(value: Any) -> None:
    cleaned = storable_json(value)
    written = orjson.dumps(cleaned)  # raises on surrogates, huge integers, depth
    assert b"\\u0000" not in written
    assert all(is_storable(s) for s in strings_in(cleaned))
    assert orjson.dumps(storable_json(cleaned)) == written  # NaN != NaN: compared as written


@SETTINGS
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63) | clean_text,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(clean_text, inner, max_size=4),
        max_leaves=30,
    )
)
def test_clean_json_is_returned_as_it_is(value: Any) -> None:
    assert storable_json(value) is value


def test_json_loses_only_what_cannot_be_written() -> None:
    deep: Any = "bottom"
    for _ in range(300):
        deep = [deep]
    cleaned = storable_json({"big": 2**70, "huge": 10**400, "nan": math.nan, "deep": deep})
    assert cleaned["big"] == float(2**70)
    assert cleaned["huge"] == str(10**400)
    assert cleaned["nan"] is None
    depth, node = 0, cleaned["deep"]
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    assert node is None
    assert depth == MAX_JSON_DEPTH - 1  # the dict holding "deep" is the first level


def test_json_keys_are_cleaned_too() -> None:
    assert storable_json({"a\x00": {"\ud800": "v\x00"}}) == {"a\ufffd": {"\ufffd": "v\ufffd"}}


def _hostile_outcome(text: str, value: Any) -> Outcome:
    page = FetchedPage(
        url="http://x.test/",
        final_url=f"http://x.test/{text}",
        status=200,
        headers={f"x-{text}": text, "content-type": "text/html"},
        content_type="text/html;" + text * 100,
        charset=text * 20,
        body=b"<html>",
    )
    link = Link(f"http://x.test/{text}", text, (text, "nofollow", "x" * 300), True, True)
    return Outcome(
        job=JOB,
        http_status=200,
        final_url=f"http://x.test/{text}",
        content_type="text/html;" + text * 100,
        scraped_title=text,
        result={"metadata": {"title": text, "json_ld": [value]}},
        error_code="e" + text * 40,
        error_message=text * 1000,
        etag=text,
        last_modified=text,
        content=PageContent(texts={"markdown": text, "html": text}, links=(link,), archive=page),
    )


def _outcome_strings(outcome: Outcome) -> list[str]:
    content = outcome.content
    assert content is not None and content.links is not None and content.archive is not None
    archive = content.archive
    return [
        *(
            s
            for s in (
                outcome.final_url,
                outcome.content_type,
                outcome.scraped_title,
                outcome.error_code,
                outcome.error_message,
                outcome.etag,
                outcome.last_modified,
                archive.final_url,
                archive.content_type,
                archive.charset,
            )
            if s is not None
        ),
        *strings_in(outcome.result),
        *content.texts.values(),
        *(s for link in content.links for s in (link.url, link.text, *link.rel)),
        *(s for item in archive.headers.items() for s in item),
    ]


@SETTINGS
@given(hostile_text, hostile_json)
def test_every_string_of_an_outcome_becomes_storable_and_fits_its_column(
    text: str, value: Any
) -> None:
    cleaned = storable_outcome(_hostile_outcome(text, value))
    assert all(is_storable(s) for s in _outcome_strings(cleaned))
    orjson.dumps(cleaned.result)
    content = cleaned.content
    assert content is not None and content.archive is not None and content.links is not None
    assert len(cleaned.content_type or "") <= MAX_CONTENT_TYPE_CHARS
    assert len(content.archive.content_type or "") <= MAX_CONTENT_TYPE_CHARS
    assert len(content.archive.charset or "") <= MAX_CHARSET_CHARS
    assert len(cleaned.error_code or "") <= MAX_ERROR_CODE_CHARS
    assert len(cleaned.error_message or "") <= MAX_ERROR_MESSAGE_CHARS
    [link] = content.links
    assert len(" ".join(link.rel)) <= MAX_REL_CHARS
    assert link.rel[:2] == (storable_text(text), "nofollow")  # whole tokens, in order
    assert storable_outcome(cleaned) == cleaned


@SETTINGS
@given(clean_text)
def test_a_clean_outcome_is_unchanged(text: str) -> None:
    outcome = Outcome(
        job=JOB,
        http_status=200,
        final_url=f"http://x.test/{text}",
        scraped_title=text,
        result={"metadata": {"title": text}},
        content=PageContent(
            texts={"text": text}, links=(Link("http://x.test/", text, ("next",), True, False),)
        ),
    )
    assert storable_outcome(outcome) is outcome  # nothing copied when nothing changes


@pytest.mark.parametrize(
    ("width", "column"),
    [
        (MAX_CONTENT_TYPE_CHARS, jobs.c.content_type),
        (MAX_CONTENT_TYPE_CHARS, page_archive.c.content_type),
        (MAX_CHARSET_CHARS, page_archive.c.charset),
        (MAX_ERROR_CODE_CHARS, jobs.c.error_code),
        (MAX_REL_CHARS, job_links.c.rel),
    ],
)
def test_the_widths_are_the_schemas(width: int, column: Any) -> None:
    assert column.type.length == width


def test_an_unstorable_outcome_fails_at_once_with_nothing_of_the_page() -> None:
    outcome = _hostile_outcome("\x00", "\x00")
    failed = unstorable(outcome, "UntranslatableCharacterError: \x00 \ud800 " + "x" * 1000)
    assert failed.job == outcome.job
    assert failed.error_code == ErrorCode.UNSTORABLE
    assert not failed.transient and not failed.succeeded
    assert failed.http_status == 200
    assert failed.content is None and failed.result is None and failed.final_url is None
    assert failed.error_message is not None and is_storable(failed.error_message)
    assert len(failed.error_message) <= 500


@pytest.mark.parametrize(
    "bad",
    [
        Link("http://x.test/\x00", "t", (), True, False),
        Link("http://x.test/", "caf\udce9", (), True, False),
        Link("http://x.test/", "t", ("no\x00follow",), True, True),
        Link("http://x.test/", "t", ("x" * 200, "y" * 100), True, False),
    ],
)
def test_one_bad_link_among_many_is_cleaned_and_the_others_kept_as_they_are(bad: Link) -> None:
    clean = [Link(f"http://x.test/{n}", f"link {n} é", ("next",), True, False) for n in range(50)]
    links = (*clean[:25], bad, *clean[25:])
    cleaned = storable_content(PageContent(links=links)).links
    assert cleaned is not None
    assert all(
        after is before for after, before in zip(cleaned, links, strict=True) if before is not bad
    )
    [fixed] = [link for link in cleaned if link not in clean]
    assert is_storable(fixed.url) and is_storable(fixed.text)
    assert all(is_storable(token) for token in fixed.rel)
    assert len(" ".join(fixed.rel)) <= MAX_REL_CHARS


def test_clean_links_are_kept_as_they_are() -> None:
    links = tuple(Link(f"http://x.test/{n}", "ü", ("a", "b"), True, False) for n in range(9))
    assert storable_content(PageContent(links=links)).links is links
