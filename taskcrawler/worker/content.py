"""A format that could not be made after a page's extraction."""

from __future__ import annotations

from taskcrawler.domain import Outcome


def format_failed(outcome: Outcome, code: str, message: str, *, transient: bool = False) -> Outcome:
    """A page fetched and read, whose format could not be made after extraction (chunks,
    json, summary): the job fails with ``code``, and keeps what it knows of the page."""
    return Outcome(
        job=outcome.job,
        http_status=outcome.http_status,
        final_url=outcome.final_url,
        content_type=outcome.content_type,
        error_code=code,
        error_message=message,
        transient=transient,
    )
