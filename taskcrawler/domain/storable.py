"""Text from the web made storable, once, before it becomes an outcome. Pure: no I/O here.

PostgreSQL's ``text`` refuses NUL (U+0000) and its JSONB refuses the escape ``\\u0000`` in strings
and keys; no driver can encode a lone surrogate (U+D800-U+DFFF), which a Python string may hold:
aiohttp decodes header bytes that are not UTF-8 to them, and JSON may spell them ``\\ud800``.
Each becomes U+FFFD, the replacement character, as an HTML parser does with NUL. SQLite would
keep a NUL, but the text is cleaned the same way for both databases so that they store the same
thing. A JSON value that orjson (which serializes JSON for both) cannot write is rebuilt:
integers beyond 64 bits become floats, and nesting past 254 levels is cut at
:data:`MAX_JSON_DEPTH` (orjson itself writes NaN and the infinities as null).

Strings bound for the schema's width-limited columns are cut to that width here: PostgreSQL
would truncate them in a cast, or refuse them, where SQLite keeps them whole.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
import re
from typing import Any, TypeVar

import orjson

from taskcrawler.domain.errors import ErrorCode
from taskcrawler.domain.jobs import Outcome
from taskcrawler.domain.pages import FetchedPage, Link, PageContent

REPLACEMENT = "\ufffd"
#: Widths of the columns these strings go to (tests hold them to the schema).
MAX_CONTENT_TYPE_CHARS = 255
MAX_CHARSET_CHARS = 64
MAX_ERROR_CODE_CHARS = 64
MAX_REL_CHARS = 255
#: An error message is ours, but it may quote the page (a header, an exception's text).
MAX_ERROR_MESSAGE_CHARS = 2000
#: orjson refuses to write deeper than 254 levels; a value rebuilt for that (or for another
#: reason) keeps this many, and null below them.
MAX_JSON_DEPTH = 128

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_INT_RANGE = (-(2**63), 2**64 - 1)  # what orjson writes as an integer
_NUL_ESCAPE = b"\\u0000"
_URL, _TEXT, _REL = (operator.attrgetter(name) for name in ("url", "text", "rel"))
_Frozen = TypeVar("_Frozen", Outcome, PageContent, FetchedPage)


def storable_text(text: str, max_chars: int | None = None) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD, cut to ``max_chars``."""
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars]
    if text.isascii():  # O(1) in CPython: most strings take this path
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    if "\x00" in text or _has_surrogates(text):
        return _UNSTORABLE.sub(REPLACEMENT, text)
    return text


def _has_surrogates(text: str) -> bool:
    # The strict UTF-16 encoder refuses lone surrogates, and is close to a copy for most text:
    # 0.3 ms for 10 MB of CJK here, where a regular expression's search took 86 ms.
    try:
        text.encode("utf-16-le")
    except UnicodeEncodeError:
        return True
    return False


def _optional_text(text: str | None, max_chars: int | None = None) -> str | None:
    return None if text is None else storable_text(text, max_chars)


def storable_json(value: Any) -> Any:
    """``value`` (JSON-like) as both databases can store it; ``value`` itself when it already is.

    One orjson pass decides: it raises on what it cannot write (surrogates, huge integers, too
    deep), and a NUL shows as its escape. Only then is the value rebuilt.
    """
    try:
        if _NUL_ESCAPE not in orjson.dumps(value):
            return value
    except orjson.JSONEncodeError:
        pass
    return _clean(value, 0)


def _clean(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        low, high = _INT_RANGE
        return value if low <= value <= high else _big_int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_JSON_DEPTH:
        return None
    if isinstance(value, dict):
        return {storable_text(str(key)): _clean(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(item, depth + 1) for item in value]
    return storable_text(str(value))


def _big_int(value: int) -> float | str:
    try:
        return float(value)
    except OverflowError:
        return str(value)


def storable_headers(headers: dict[str, str]) -> dict[str, str]:
    if all(storable_text(k) is k and storable_text(v) is v for k, v in headers.items()):
        return headers
    return {storable_text(k): storable_text(v) for k, v in headers.items()}


def storable_link(link: Link) -> Link:
    if _is_storable(link.url) and _is_storable(link.text) and _storable_rel_as_is(link.rel):
        return link  # nearly every link: checked without building anything
    return dataclasses.replace(
        link,
        url=storable_text(link.url),
        text=storable_text(link.text),
        rel=_storable_rel(link.rel),
    )


def _is_storable(text: str) -> bool:
    if text.isascii():
        return "\x00" not in text
    return "\x00" not in text and not _has_surrogates(text)


def _storable_rel_as_is(rel: tuple[str, ...]) -> bool:
    if not rel:
        return True
    width = sum(map(len, rel)) + len(rel) - 1
    return width <= MAX_REL_CHARS and all(map(_is_storable, rel))


def _storable_rel(rel: tuple[str, ...]) -> tuple[str, ...]:
    """The tokens stored space-separated in a column of :data:`MAX_REL_CHARS`: those that fit."""
    kept: list[str] = []
    width = -1
    for token in map(storable_text, rel):
        width += len(token) + 1
        if width > MAX_REL_CHARS:
            break
        kept.append(token)
    return tuple(kept)


def storable_archive(page: FetchedPage) -> FetchedPage:
    return _with(
        page,
        final_url=storable_text(page.final_url),
        headers=storable_headers(page.headers),
        content_type=_optional_text(page.content_type, MAX_CONTENT_TYPE_CHARS),
        charset=_optional_text(page.charset, MAX_CHARSET_CHARS),
    )


def storable_content(content: PageContent) -> PageContent:
    links = content.links
    if links is not None and not _links_storable_as_is(links):
        links = tuple(map(storable_link, links))
    texts = content.texts
    cleaned = {fmt: storable_text(body) for fmt, body in texts.items()}
    return _with(
        content,
        texts=texts if all(cleaned[fmt] is body for fmt, body in texts.items()) else cleaned,
        links=links,
        archive=None if content.archive is None else storable_archive(content.archive),
    )


def _links_storable_as_is(links: tuple[Link, ...]) -> bool:
    """All links at once, each field joined in C: a link at a time took 1 us each."""
    rels = list(map(_REL, links))
    return (
        _is_storable("".join(map(_URL, links)))
        and _is_storable("".join(map(_TEXT, links)))
        and _is_storable("".join(itertools.chain.from_iterable(rels)))
        and max(map(len, map(" ".join, rels)), default=0) <= MAX_REL_CHARS
    )


def storable_outcome(outcome: Outcome) -> Outcome:
    """Every string and JSON value of ``outcome`` made storable (see the module's docstring)."""
    return _with(
        outcome,
        final_url=_optional_text(outcome.final_url),
        content_type=_optional_text(outcome.content_type, MAX_CONTENT_TYPE_CHARS),
        scraped_title=_optional_text(outcome.scraped_title),
        result=None if outcome.result is None else storable_json(outcome.result),
        error_code=_optional_text(outcome.error_code, MAX_ERROR_CODE_CHARS),
        error_message=_optional_text(outcome.error_message, MAX_ERROR_MESSAGE_CHARS),
        etag=_optional_text(outcome.etag),
        last_modified=_optional_text(outcome.last_modified),
        content=None if outcome.content is None else storable_content(outcome.content),
    )


def _with(value: _Frozen, **fields: Any) -> _Frozen:
    """``value`` with the fields whose value is another object: ``value`` itself if none is
    (nearly always; a copy of a frozen dataclass costs a few microseconds)."""
    changed = {name: new for name, new in fields.items() if new is not getattr(value, name)}
    return dataclasses.replace(value, **changed) if changed else value


def unstorable(outcome: Outcome, reason: str) -> Outcome:
    """What is recorded instead of an outcome the database refused: the job FAILED at once
    (the same page would be refused again), with nothing the page produced but its status."""
    return Outcome(
        job=outcome.job,
        http_status=outcome.http_status,
        error_code=ErrorCode.UNSTORABLE,
        error_message=storable_text(f"the database refused the page's result: {reason}", 500),
        finished_at=outcome.finished_at,
    )
