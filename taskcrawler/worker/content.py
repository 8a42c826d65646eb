"""What a job's options ask of its extraction, and a format that could not be made after it."""

from __future__ import annotations

from taskcrawler.domain import Outcome
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.domain.selectors import parse_ignore_selectors
from taskcrawler.extract.page import WHOLE_CONTENT, ContentChoice


def content_choice(options: ScrapeOptions) -> ContentChoice:
    """What of a page a job's options have its Markdown, text and cleaned HTML hold (the
    selectors were checked when the job was submitted)."""
    if (
        options.only_main_content
        and not options.include_tags
        and not options.exclude_tags
        and not options.keep_base64_images
    ):
        return WHOLE_CONTENT  # nearly every job: no selectors to parse, no choice to compare
    choice = ContentChoice(
        only_main_content=options.only_main_content,
        include=parse_ignore_selectors(options.include_tags, "include_tags"),
        exclude=parse_ignore_selectors(options.exclude_tags, "exclude_tags"),
        keep_data_images=options.keep_base64_images,
    )
    return WHOLE_CONTENT if choice == WHOLE_CONTENT else choice


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
