"""What submitting a URL again does to its job: the plan, decided once for every surface."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taskcrawler.domain.errors import FIXES, ErrorCode, FetchError, log_line
from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.resubmission import Action, Asked, Existing, plan
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions

NOW = datetime(2026, 12, 7, 12, tzinfo=UTC)
HOUR_AGO = NOW - timedelta(hours=1)


def job(status: str = "COMPLETED", *formats: str, **fields: object) -> Existing:
    values: dict[str, object] = {
        "status": JobStatus(status),
        "formats": formats or ("metadata",),
        "render": "never",
        "fetched_at": HOUR_AGO,
        "archived": True,
        "from_archive": False,
    }
    return Existing(**(values | fields))  # type: ignore[arg-type]


def asked(*formats: str, **options: object) -> Asked:
    return Asked(formats or ("metadata",), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("existing", "request_", "expected"),
    [
        # A finished job lacking formats: made from its stored page, or fetched without one.
        (job(), asked("markdown"), (Action.DERIVE, ("metadata", "markdown"), True)),
        (job(archived=False), asked("text"), (Action.FETCH, ("metadata", "text"), False)),
        # Only the live page gives a screenshot; a job that did not render now renders.
        (
            job(),
            asked("screenshot", render="always"),
            (Action.FETCH, ("metadata", "screenshot"), False),
        ),
        # Nothing lacking: answered as it is; metadata is made by every run anyway.
        (job("COMPLETED", "metadata", "text"), asked("text"), (Action.KEEP, None, False)),
        (job("COMPLETED", "text"), asked("metadata"), (Action.WIDEN, ("text", "metadata"), False)),
        # max_age counts from the fetch, and a stale page is fetched with every format.
        (
            job(),
            asked("markdown", max_age=7200),
            (Action.DERIVE, ("metadata", "markdown"), True),
        ),
        (job(), asked("markdown", max_age=60), (Action.FETCH, ("metadata", "markdown"), False)),
        (job(), asked(max_age=0), (Action.FETCH, ("metadata",), False)),
        # A failure is not kept: submitted again, the job runs again.
        (job("FAILED"), asked(), (Action.FETCH, ("metadata",), False)),
        (job("CANCELLED"), asked("html"), (Action.FETCH, ("metadata", "html"), False)),
        # A run on its way makes what it is given; one under way is replaced.
        (job("PENDING"), asked("links"), (Action.WIDEN, ("metadata", "links"), False)),
        (job("PENDING"), asked(max_age=0), (Action.KEEP, None, False)),
        (job("PROCESSING"), asked("chunks"), (Action.TAKE_OVER, ("metadata", "chunks"), False)),
        (job("PROCESSING", from_archive=True), asked("text"), (Action.TAKE_OVER, None, True)),
        (job("PROCESSING"), asked("metadata"), (Action.KEEP, None, False)),
        # A run that was to read the stored copy fetches for max_age, or for a screenshot.
        (
            job("PENDING", from_archive=True),
            asked(max_age=0),
            (Action.WIDEN, ("metadata",), False),
        ),
        (job("PENDING", from_archive=True), asked(max_age=7200), (Action.KEEP, None, True)),
        (job("PROCESSING", from_archive=True), asked(max_age=0), (Action.TAKE_OVER, None, False)),
        (
            job("PENDING", from_archive=True),
            asked("screenshot", render="auto"),
            (Action.WIDEN, ("metadata", "screenshot"), False),
        ),
    ],
)
def test_the_plan_of_a_submission(
    existing: Existing, request_: Asked, expected: tuple[Action, tuple[str, ...] | None, bool]
) -> None:
    action, formats, from_archive = expected
    decided = plan(existing, request_, now=NOW)
    assert (decided.action, decided.from_archive) == (action, from_archive)
    if formats is not None:
        assert decided.formats == formats
    assert decided.dispatches == (action in (Action.DERIVE, Action.FETCH, Action.TAKE_OVER))


def test_a_screenshot_added_to_a_job_that_never_rendered_renders_it() -> None:
    decided = plan(job(), asked("screenshot", render="auto"), now=NOW)
    assert decided.render == "auto"
    kept = plan(job(render="always"), asked("screenshot", render="auto"), now=NOW)
    assert kept.render == "always"


def test_submissions_of_one_url_are_folded() -> None:
    folded = Asked.fold(
        [asked("markdown", max_age=600), asked("text", max_age=60), asked("screenshot")]
    )
    assert folded == Asked(("markdown", "text", "screenshot"), max_age=60)


def test_an_error_a_user_can_fix_names_the_fix() -> None:
    blocked = FetchError(ErrorCode.BLOCKED_ADDRESS, "the address 127.0.0.1 is blocked: loopback")
    assert blocked.log_line.startswith("blocked_address: the address 127.0.0.1 is blocked")
    assert "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS=true" in blocked.log_line
    assert log_line("http_404", "HTTP 404 Not Found") == "http_404: HTTP 404 Not Found"
    # Every fix names a setting or what to do, and every setting it names exists.
    from taskcrawler.settings import Settings

    settings = {f"TASKCRAWLER_{name.upper()}" for name in Settings.model_fields}
    every: set[str] = set()
    for code, fix in FIXES.items():
        named = {
            word.split("=")[0].strip("(),.;:")
            for word in fix.split()
            if word.startswith(("TASKCRAWLER_", "(TASKCRAWLER_"))
        }
        assert named <= settings, (code, named - settings)
        every |= named
    assert {"TASKCRAWLER_ALLOW_PRIVATE_NETWORKS", "TASKCRAWLER_MAX_BODY_BYTES"} <= every


def test_page_options_read_the_page_again() -> None:
    """Other selectors: made again from the stored page; other headers: fetched again; none
    asked, or only what paces or allows the fetch: the job as it is."""
    tags = ScrapeOptions.create(include_tags=["article"])
    cookie = ScrapeOptions.create(headers={"Cookie": "a=b"})
    lenient = ScrapeOptions.create(skip_tls_verification=True, delay=1.0)
    done = job("COMPLETED", "markdown")
    derived = plan(done, asked("markdown", options=tags), now=NOW)
    assert (derived.action, derived.from_archive, derived.options) == (Action.DERIVE, True, tags)
    fetched = plan(done, asked("markdown", options=cookie), now=NOW)
    assert (fetched.action, fetched.options) == (Action.FETCH, cookie)
    unarchived = plan(job("COMPLETED", "markdown", archived=False), asked(options=tags), now=NOW)
    assert unarchived.action is Action.FETCH
    assert plan(done, asked("markdown"), now=NOW).action is Action.KEEP
    kept = plan(done, asked("markdown", options=lenient), now=NOW)
    assert (kept.action, kept.options) == (Action.KEEP, DEFAULT_OPTIONS)
    under_way = plan(job("PROCESSING", "markdown"), asked(options=cookie), now=NOW)
    assert (under_way.action, under_way.options) == (Action.TAKE_OVER, cookie)
    waiting = plan(job("PENDING", "markdown"), asked(options=tags), now=NOW)
    assert (waiting.action, waiting.options) == (Action.WIDEN, tags)
    # The last submission's options win when a batch repeats a URL.
    folded = Asked.fold([asked(options=tags), asked(), asked(options=cookie)])
    assert folded.options == cookie
