"""Typed failures. ``error_log`` always begins with the error code, then a human message."""

from __future__ import annotations

from enum import StrEnum

#: How to turn the model on: what a request that needs one is told without it.
HOW_TO_CONFIGURE = (
    "set TASKCRAWLER_LLM_URL (the base URL of an OpenAI-compatible chat endpoint, e.g. "
    "http://localhost:11434/v1 for Ollama) and TASKCRAWLER_LLM_MODEL where the API and the "
    "workers run (and TASKCRAWLER_LLM_API_KEY if it needs a key)"
)


class ErrorCode(StrEnum):
    # transient: retried with backoff
    TIMEOUT = "timeout"
    DNS = "dns"
    CONNECT = "connect"
    CONNECTION_CLOSED = "connection_closed"
    HTTP_429 = "http_429"
    HTTP_5XX = "http_5xx"
    WORKER_LOST = "worker_lost"
    # permanent: FAILED at once
    HTTP_4XX = "http_4xx"
    BLOCKED_ADDRESS = "blocked_address"
    TOO_LARGE = "too_large"
    UNSUPPORTED_CONTENT_TYPE = "unsupported_content_type"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    REDIRECT_LOOP = "redirect_loop"
    ROBOTS_DISALLOWED = "robots_disallowed"
    INVALID_URL = "invalid_url"
    BAD_RESPONSE = "bad_response"
    EXTRACTION = "extraction_failed"
    TLS = "tls"  # a bad certificate does not fix itself in seconds
    OUT_OF_SCOPE = "out_of_scope"  # a crawl's page redirected out of the crawl's scope
    # a crawl's page that is another of its pages (a redirect leads there): held once
    DUPLICATE = "duplicate"
    # not the job's failure: rescheduled without counting an attempt (DEFERRAL_CODES)
    HOST_BUSY = "host_busy"  # politeness had no slot for the host in time
    # Redis (shared politeness, robots cache) unreachable while fetching
    QUEUE_UNAVAILABLE = "queue_unavailable"
    # permanent: the same page would do it again
    PARSE_TIMEOUT = "parse_timeout"  # its parse overran TASKCRAWLER_PARSE_TIMEOUT_SECONDS
    PARSE_CRASHED = "parse_crashed"  # its parse killed the process that ran it (a hostile PDF)
    UNREADABLE_DOCUMENT = "unreadable_document"  # a PDF that cannot be opened (damaged, locked)
    UNSTORABLE = "unstorable_result"  # the database refused what the page produced
    # rendering in a browser
    RENDER_UNAVAILABLE = "render_unavailable"  # permanent: this worker has no usable browser
    # permanent: the page was received but its own scripts kept the browser busy past the
    # deadline (a loop, a DOM that never settles); the same page would hang again on a retry
    RENDER_TIMEOUT = "render_timeout"
    RENDER_CRASHED = "render_crashed"  # transient: the browser died; a fresh one is started
    ACTION_FAILED = "action_failed"  # permanent: a page action could not be done (named)
    # format "chunks"
    VECTORS_UNAVAILABLE = "vectors_unavailable"  # permanent: PostgreSQL without pgvector
    EMBEDDING_FAILED = "embedding_failed"  # the embedder failed; retried when it may recover
    # formats "json" and "summary" (permanent: the page was fetched; asking again is the user's)
    LLM_NOT_CONFIGURED = "llm_not_configured"  # this worker has no TASKCRAWLER_LLM_URL
    LLM_UNAVAILABLE = "llm_unavailable"  # no usable answer: deadline, 429/5xx, not a completion
    LLM_INVALID_ANSWER = "llm_invalid_answer"  # not JSON, or breaking the schema, every attempt
    JSON_SCHEMA_MISMATCH = "json_schema_mismatch"  # what the selectors read breaks the schema


TRANSIENT_CODES = frozenset(
    {
        ErrorCode.TIMEOUT,
        ErrorCode.DNS,
        ErrorCode.CONNECT,
        ErrorCode.CONNECTION_CLOSED,
        ErrorCode.HTTP_429,
        ErrorCode.HTTP_5XX,
        ErrorCode.WORKER_LOST,
        ErrorCode.HOST_BUSY,
        ErrorCode.QUEUE_UNAVAILABLE,
        ErrorCode.RENDER_CRASHED,
    }
)

#: Not failures of the job at all: it is rescheduled without counting a retry.
DEFERRAL_CODES = frozenset({ErrorCode.HOST_BUSY, ErrorCode.QUEUE_UNAVAILABLE})

#: What a user can do about an error: the setting (of the deployment) or the request that
#: changes the outcome. Every job's ``error_log`` ends with it, so every surface shows it (the
#: API, webhooks, the dashboard, the command line, Firecrawl's errors). Errors that are the
#: site's alone (a 404, a 5xx, a malformed answer) have none.
FIXES: dict[str, str] = {
    ErrorCode.BLOCKED_ADDRESS: (
        "to fetch loopback and private addresses, set TASKCRAWLER_ALLOW_PRIVATE_NETWORKS=true "
        "where the workers run (it is off so that a submitted URL cannot reach the services "
        "on their network), then submit the URL again"
    ),
    ErrorCode.TIMEOUT: (
        "for a slow site, raise TASKCRAWLER_FETCH_TIMEOUT_SECONDS "
        "(TASKCRAWLER_RENDER_TIMEOUT_SECONDS for a rendered page)"
    ),
    ErrorCode.DNS: "check the URL's host name",
    ErrorCode.CONNECT: "check the URL's host and port; the server may be down",
    ErrorCode.HTTP_429: (
        "the site limits how fast it is asked: lower TASKCRAWLER_HOST_CONCURRENCY or raise "
        "TASKCRAWLER_HOST_DELAY_SECONDS"
    ),
    ErrorCode.TOO_LARGE: (
        "raise TASKCRAWLER_MAX_BODY_BYTES (TASKCRAWLER_RENDER_MAX_BYTES for a rendered page)"
    ),
    ErrorCode.TOO_MANY_REDIRECTS: "raise TASKCRAWLER_MAX_REDIRECTS",
    ErrorCode.OUT_OF_SCOPE: (
        "to keep pages that redirect there, widen the crawl's scope (allow_subdomains, "
        "allow_external, include_paths, exclude_paths)"
    ),
    ErrorCode.ROBOTS_DISALLOWED: (
        "the site's robots.txt asks crawlers to keep out; where you may ignore it, set "
        "TASKCRAWLER_RESPECT_ROBOTS=false"
    ),
    ErrorCode.PARSE_TIMEOUT: "raise TASKCRAWLER_PARSE_TIMEOUT_SECONDS",
    ErrorCode.RENDER_UNAVAILABLE: (
        "install Chromium where the workers run (apt-get install chromium) or set "
        'TASKCRAWLER_BROWSER to its path; or ask for "render": "never"'
    ),
    ErrorCode.RENDER_TIMEOUT: (
        "raise TASKCRAWLER_RENDER_TIMEOUT_SECONDS, or wait for less (render_options)"
    ),
    ErrorCode.ACTION_FAILED: (
        "check the action named against the page (its selector, its script); a slow page may "
        "need a wait action before it, or a higher TASKCRAWLER_RENDER_TIMEOUT_SECONDS"
    ),
    ErrorCode.EMBEDDING_FAILED: (
        "check TASKCRAWLER_EMBEDDER and its TASKCRAWLER_EMBEDDER_URL, _MODEL and _API_KEY"
    ),
    ErrorCode.LLM_NOT_CONFIGURED: HOW_TO_CONFIGURE,
    ErrorCode.LLM_UNAVAILABLE: (
        "check the model's server at TASKCRAWLER_LLM_URL; for a slow model raise "
        "TASKCRAWLER_LLM_TIMEOUT_SECONDS"
    ),
    ErrorCode.LLM_INVALID_ANSWER: (
        "a simpler schema or a clearer prompt, or a model that follows them (TASKCRAWLER_LLM_MODEL)"
    ),
    ErrorCode.JSON_SCHEMA_MISMATCH: (
        "the page does not hold what the schema's selectors ask for: check the selectors, "
        "or make the field optional (leave it out of required, allow null)"
    ),
}


def log_line(code: str, message: str) -> str:
    """What ``error_log`` says of an error: its code, a message, then how to fix it when a
    user can (:data:`FIXES`)."""
    fix = FIXES.get(code)
    return f"{code}: {message}" if fix is None else f"{code}: {message}. Fix: {fix}."


class FetchError(Exception):
    """A fetch that did not produce a page.

    ``code`` is a stable machine-readable string (an :class:`ErrorCode`, or ``http_<status>`` for
    a specific 4xx such as ``http_404``); ``transient`` decides whether the job is retried.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        transient: bool | None = None,
        retry_after: float | None = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.transient = code in TRANSIENT_CODES if transient is None else transient
        self.retry_after = retry_after
        self.http_status = http_status

    @property
    def log_line(self) -> str:
        return log_line(self.code, self.message)

    @classmethod
    def for_status(
        cls, status: int, reason: str = "", retry_after: float | None = None
    ) -> FetchError:
        """The error for an HTTP status that is not a success."""
        text = f"HTTP {status} {reason}".strip()
        if status == 429:
            return cls(ErrorCode.HTTP_429, text, retry_after=retry_after, http_status=status)
        if status >= 500:
            return cls(ErrorCode.HTTP_5XX, text, retry_after=retry_after, http_status=status)
        return cls(f"http_{status}", text, transient=False, http_status=status)


class InvalidURL(ValueError):
    """A URL that TaskCrawler refuses at submit time."""


# --- what a use case refuses: each maps to one HTTP status in api/errors.py ------------------


class NotFound(Exception):
    """No such object for this caller: another tenant's objects are not found either."""


class JobNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("no job with this id")


class CrawlNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("no crawl with this id")


class Conflict(Exception):
    """The object is not in a state that allows this (e.g. cancelling a finished job)."""


class LimitExceeded(Exception):
    """A rate or pending-jobs limit; worth trying again after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InvalidCursor(ValueError):
    """A page cursor this service did not make; ``parameter`` names the query parameter."""

    def __init__(self, message: str, parameter: str = "cursor") -> None:
        super().__init__(message)
        self.parameter = parameter


class Unauthenticated(Exception):
    """No valid API key where one is needed."""


class Forbidden(Exception):
    """A valid API key that may not do this."""


class ServiceUnavailable(Exception):
    """A dependency (database or queue) cannot be reached right now; callers may retry later."""

    dependency = "service"


class StorageUnavailable(ServiceUnavailable):
    dependency = "database"


class QueueUnavailable(ServiceUnavailable):
    dependency = "queue"


class EmbedderUnavailable(ServiceUnavailable):
    dependency = "embedder"


class UnstorableData(Exception):
    """The database refused a value of what was being written: the data's fault, not the
    connection's, so writing it again would fail again."""


class VectorsUnavailable(Exception):
    """The database cannot store or search vectors: PostgreSQL without pgvector."""
