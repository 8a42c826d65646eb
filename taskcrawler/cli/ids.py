"""Short ids on the command line, as git shows commits.

Tables show each id by the shortest start of it (8 hexadecimal digits at least) that tells it
from every other id shown. Every command that takes an id takes such a start too: a full id is
used as it is; a shorter one is looked up (jobs by the API's ``id_prefix`` filter, crawls and
monitors in their listing) and must start exactly one id, or the command refuses, naming the
candidates.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from taskcrawler.cli.client import MAX_PAGE, ApiClient, ApiError
from taskcrawler.domain.jobs import id_range

#: Hex digits of an id shown in a table at least (its first group).
SHORT_DIGITS = 8
#: Candidates named when a short id is ambiguous.
NAMED = 5
#: Crawls and monitors are looked up in their listing: this many pages of it at most.
MAX_LISTED_PAGES = 20

Lister = Callable[[str | None], Awaitable[tuple[list[dict[str, Any]], str | None]]]


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """Each id -> the shortest start of it (``SHORT_DIGITS`` digits at least) that no other id
    of ``ids`` shares."""
    digits = sorted({_digits(full): full for full in ids}.items())
    shown: dict[str, str] = {}
    for index, (mine, full) in enumerate(digits):
        needed = SHORT_DIGITS
        for neighbour in (index - 1, index + 1):
            if 0 <= neighbour < len(digits):
                needed = max(needed, _common(mine, digits[neighbour][0]) + 1)
        shown[full] = _with_dashes(full, min(needed, 32))
    return shown


async def job_id(api: ApiClient, given: str) -> str:
    """The full id of the job whose id starts with ``given``."""
    if (full := _full(given)) is not None:
        return full
    _check(given)
    page, _ = await api.list_jobs(id_prefix=given, limit=NAMED + 1)
    return _one("job", given, [(job["id"], str(job["url"])) for job in page], "jobs list")


async def crawl_id(api: ApiClient, given: str) -> str:
    """The full id of the crawl whose id starts with ``given``."""
    if (full := _full(given)) is not None:
        return full
    _check(given)

    async def page(cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        return await api.list_crawls(limit=MAX_PAGE, cursor=cursor)

    found = await _listed(page, given)
    return _one("crawl", given, [(c["id"], str(c["url"])) for c in found], "crawl status")


async def monitor_id(api: ApiClient, given: str) -> str:
    """The full id of the monitor whose id starts with ``given``."""
    if (full := _full(given)) is not None:
        return full
    _check(given)

    async def page(cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        return await api.list_monitors(limit=MAX_PAGE, cursor=cursor)

    found = await _listed(page, given)
    described = [
        (m["id"], ", ".join(m["urls"]) or str((m.get("crawl") or {}).get("url"))) for m in found
    ]
    return _one("monitor", given, described, "monitor list")


async def _listed(page: Lister, given: str) -> list[dict[str, Any]]:
    wanted = _digits(given)
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_LISTED_PAGES):
        items, cursor = await page(cursor)
        found += [item for item in items if _digits(item["id"]).startswith(wanted)]
        if not cursor:
            return found
    raise ApiError(f"too many to look {given!r} up in: give the full id", status=400)


def _one(kind: str, given: str, found: Sequence[tuple[str, str]], listing: str) -> str:
    if len(found) == 1:
        return found[0][0]
    if not found:
        raise ApiError(
            f"no {kind}'s id starts with {given!r} (`taskcrawler {listing}` shows them)",
            status=404,
        )
    named = "; ".join(f"{full} ({what})" for full, what in found[:NAMED])
    more = " and more" if len(found) > NAMED else ""
    raise ApiError(
        f"the short id {given!r} is ambiguous: it starts the ids of {named}{more}; give more of it",
        status=400,
    )


def _full(given: str) -> str | None:
    """``given`` as a full id, None when it is not one."""
    if len(_digits(given)) != 32:
        return None
    try:
        return str(uuid.UUID(given))
    except ValueError:
        return None


def _check(given: str) -> None:
    try:
        id_range(given)
    except ValueError as exc:
        raise ApiError(f"{given!r}: {exc}", status=400) from None


def _digits(full: str) -> str:
    return full.replace("-", "").lower()


def _common(a: str, b: str) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _with_dashes(full: str, digits: int) -> str:
    """The start of ``full`` (a UUID's text) that holds ``digits`` hex digits."""
    taken = 0
    for index, char in enumerate(full):
        if char != "-":
            taken += 1
            if taken == digits:
                return full[: index + 1]
    return full
