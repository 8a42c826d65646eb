"""What a crawl asks for (:class:`CrawlSpec`), each field checked, and its path patterns.

Path patterns come from users, so they are compiled with RE2 (``google-re2``): matching takes
time linear in the path whatever the pattern, so no pattern can be catastrophic to evaluate.
RE2 has no backreferences and no lookaround; a pattern that uses them is refused with a message
that names the field.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, fields, replace
from enum import StrEnum
from typing import Any, Literal

import re2

from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.jobs import DEFAULT_FORMATS, UNSTATED_FORMATS, JobOptions
from taskcrawler.domain.rendering import RENDER_MODES, RenderRequest, effective_mode
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions
from taskcrawler.domain.urls import validate_url

DEFAULT_LIMIT = 10_000


#: The largest ``limit`` unless the deployment sets another (TASKCRAWLER_CRAWL_MAX_LIMIT).
DEFAULT_MAX_LIMIT = 100_000


MAX_DEPTH = 1_000


MAX_PATTERNS = 100


MAX_PATTERN_LENGTH = 1_000


#: Memory RE2 may use for one compiled pattern; a bigger program is refused as too complex.
PATTERN_MAX_MEMORY = 1 << 20


#: A century, as for jobs: older than any page can be.
MAX_AGE_SECONDS = 100 * 365 * 24 * 3600


#: The webhook events a crawl can announce to its callback URL: each finished page, and the end.
CRAWL_PAGE_EVENT = "crawl.page"


CRAWL_COMPLETED_EVENT = "crawl.completed"


WEBHOOK_EVENTS = (CRAWL_PAGE_EVENT, CRAWL_COMPLETED_EVENT)


DEFAULT_WEBHOOK_EVENTS = (CRAWL_COMPLETED_EVENT,)


def stored_webhook_events(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The webhook events of a crawl's stored spec (:meth:`CrawlSpec.to_dict`); a spec stored
    without them asked for the default."""
    return tuple(spec.get("webhook_events", DEFAULT_WEBHOOK_EVENTS))


class SitemapMode(StrEnum):
    """``include``: sitemaps and links; ``skip``: links only; ``only``: sitemaps only."""

    INCLUDE = "include"
    SKIP = "skip"
    ONLY = "only"


#: :class:`SitemapMode`'s values, as a request or a view spells them (a test holds the two
#: together).
Sitemap = Literal["include", "skip", "only"]


class InvalidCrawlSpec(ValueError):
    """Bad input for a crawl (or a map); ``field`` names the offending field, as in
    ``include_paths[2]``, so the API can answer 422 pointing at it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    options.max_mem = PATTERN_MAX_MEMORY
    return options


def compile_pattern(pattern: str, field: str) -> re2._Regexp:
    """One user pattern, compiled with RE2, or :class:`InvalidCrawlSpec` naming ``field``."""
    if not isinstance(pattern, str) or not pattern:
        raise InvalidCrawlSpec(field, "a pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidCrawlSpec(field, f"a pattern may be at most {MAX_PATTERN_LENGTH} characters")
    try:
        return re2.compile(pattern, options=_re2_options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidCrawlSpec(
            field,
            f"invalid regular expression {pattern!r}: {reason} (RE2 syntax: no backreferences "
            "or lookaround)",
        ) from None


def compile_patterns(patterns: Sequence[str], field: str) -> tuple[re2._Regexp, ...]:
    if isinstance(patterns, str):
        raise InvalidCrawlSpec(field, "must be a list of regular expressions, not one string")
    if len(patterns) > MAX_PATTERNS:
        raise InvalidCrawlSpec(field, f"at most {MAX_PATTERNS} patterns")
    return tuple(compile_pattern(p, f"{field}[{i}]") for i, p in enumerate(patterns))


def _checked_url(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidCrawlSpec(field, "must be a URL string")
    try:
        return validate_url(value)
    except InvalidURL as exc:
        raise InvalidCrawlSpec(field, str(exc)) from None


def _checked_int(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidCrawlSpec(field, "must be an integer")
    if not low <= value <= high:
        raise InvalidCrawlSpec(field, f"must be between {low:,} and {high:,}, not {value:,}")
    return value


def _checked_flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidCrawlSpec(field, "must be true or false")
    return value


def _checked_sitemap(value: object) -> SitemapMode:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return SitemapMode(value)
    except ValueError:
        choices = ", ".join(mode.value for mode in SitemapMode)
        raise InvalidCrawlSpec("sitemap", f"must be one of {choices}, not {value!r}") from None


def _checked_formats(value: object, known: Collection[str] | None) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise InvalidCrawlSpec("formats", "must be a non-empty list of format names")
    formats = tuple(dict.fromkeys(value))
    for index, name in enumerate(formats):
        if not isinstance(name, str) or (known is not None and name not in known):
            allowed = f"; known: {', '.join(sorted(known))}" if known is not None else ""
            raise InvalidCrawlSpec(f"formats[{index}]", f"unknown format {name!r}{allowed}")
    return formats


def _checked_render(
    mode: object, formats: Sequence[str], options: ScrapeOptions = DEFAULT_OPTIONS
) -> str:
    """The pages' render mode, as a job's: see :func:`effective_mode`."""
    if mode is not None and not isinstance(mode, str):
        raise InvalidCrawlSpec("render", f"must be one of {', '.join(RENDER_MODES)}")
    try:
        return effective_mode(mode, list(formats), options)
    except ValueError as exc:
        raise InvalidCrawlSpec("render", str(exc)) from None


def _checked_patterns(value: object, field: str) -> None:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidCrawlSpec(field, "must be a list of regular expressions")


def _checked_options(value: object) -> ScrapeOptions:
    if not isinstance(value, ScrapeOptions):
        raise InvalidCrawlSpec("options", "must be scrape options")
    return value


def _checked_render_options(value: object) -> None:
    if value is not None and not isinstance(value, RenderRequest):
        raise InvalidCrawlSpec("render_options", "must be render options")


def _checked_events(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidCrawlSpec("webhook_events", "must be a list of event names")
    events = tuple(dict.fromkeys(value))
    for index, name in enumerate(events):
        if name not in WEBHOOK_EVENTS:
            raise InvalidCrawlSpec(
                f"webhook_events[{index}]",
                f"unknown event {name!r}; known: {', '.join(WEBHOOK_EVENTS)}",
            )
    return events


def _checked_max_age(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidCrawlSpec("max_age", "must be a number of seconds")
    if not 0 <= value <= MAX_AGE_SECONDS:
        raise InvalidCrawlSpec("max_age", f"must be between 0 and {MAX_AGE_SECONDS} seconds")
    return float(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class PageOptions(JobOptions):
    """What a crawl asks of every page: a job's options (:class:`JobOptions`, not listed
    again), but for its formats and scrape options, always named (a job's left out may mean
    "those the URL's job has"). ``render`` never, auto or always (``CrawlSpec.create`` picks
    always for a screenshot when not asked); ``render_options`` None is the defaults."""

    formats: tuple[str, ...] = DEFAULT_FORMATS
    options: ScrapeOptions = DEFAULT_OPTIONS


@dataclass(frozen=True, slots=True)
class CrawlSpec:
    """What a crawl asks for: where it goes, and what it asks of its pages (``pages``). Build
    it with :meth:`create`, which validates every field (a direct construction is validated
    too, except against a deployment's ``max_limit``).

    ``max_depth``: link hops from the start URL (``None``: no limit but ``limit``; sitemap URLs
    count as one hop). ``include_paths`` / ``exclude_paths``: RE2 patterns searched in a URL's
    path (anchor them with ``^`` and ``$`` as needed); exclusion wins. ``webhook_events``: what
    the callback URL is told of (:data:`WEBHOOK_EVENTS`). A page's ``max_age``: seconds; a page
    this tenant scraped more recently is reused instead of fetched.
    """

    url: str
    max_depth: int | None = None
    limit: int = DEFAULT_LIMIT
    include_paths: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()
    allow_subdomains: bool = False
    allow_external: bool = False
    sitemap: SitemapMode = SitemapMode.INCLUDE
    pages: PageOptions = PageOptions()
    webhook_events: tuple[str, ...] = DEFAULT_WEBHOOK_EVENTS

    def __post_init__(self) -> None:
        _checked_url(self.url, "url")
        if self.max_depth is not None:
            _checked_int(self.max_depth, "max_depth", 0, MAX_DEPTH)
        _checked_int(self.limit, "limit", 1, 2**31 - 1)
        _checked_patterns(self.include_paths, "include_paths")
        _checked_patterns(self.exclude_paths, "exclude_paths")
        object.__setattr__(self, "include_paths", tuple(self.include_paths))
        object.__setattr__(self, "exclude_paths", tuple(self.exclude_paths))
        compile_patterns(self.include_paths, "include_paths")
        compile_patterns(self.exclude_paths, "exclude_paths")
        _checked_flag(self.allow_subdomains, "allow_subdomains")
        _checked_flag(self.allow_external, "allow_external")
        object.__setattr__(self, "sitemap", _checked_sitemap(self.sitemap))
        object.__setattr__(self, "pages", _checked_pages(self.pages))
        object.__setattr__(self, "webhook_events", _checked_events(self.webhook_events))

    @property
    def page_webhooks(self) -> bool:
        """Whether every finished page is announced (``crawl.page``)."""
        return CRAWL_PAGE_EVENT in self.webhook_events

    def with_formats(self, formats: Sequence[str]) -> CrawlSpec:
        """This spec, its pages asking for ``formats``."""
        return replace(self, pages=replace(self.pages, formats=tuple(formats)))

    @classmethod
    def create(
        cls,
        url: str,
        *,
        max_limit: int = DEFAULT_MAX_LIMIT,
        known_formats: Collection[str] | None = None,
        **fields: Any,
    ) -> CrawlSpec:
        """A validated spec of ``url`` and ``fields`` (by the names a request and a stored
        spec give them: the spec's own, and its pages' job options; each left out its default;
        ``render`` left out or None is chosen for the formats, as a job's);
        :class:`InvalidCrawlSpec` names the first bad field. The fields are not listed again
        here: a field added to the spec, or a job option, is taken as it is declared."""
        _checked_url(url, "url")
        # A name or a type no field takes is refused naming it, as a bad value is: a monitor's
        # crawl is a client's free-form object.
        unknown = sorted(set(fields) - _CREATED_FIELDS)
        if unknown:
            raise InvalidCrawlSpec(unknown[0], "unknown field")
        _checked_int(fields.get("limit", DEFAULT_LIMIT), "limit", 1, max_limit)
        for name in ("include_paths", "exclude_paths"):
            _checked_patterns(fields.get(name, ()), name)
        formats = _checked_formats(fields.get("formats", DEFAULT_FORMATS), known_formats)
        for name in ("include_paths", "exclude_paths"):
            if name in fields:
                fields[name] = tuple(fields[name])
        fields["sitemap"] = _checked_sitemap(fields.get("sitemap", SitemapMode.INCLUDE))
        if "formats" in fields:
            fields["formats"] = formats
        if fields.get("options") is None:  # left out, or null in a monitor's crawl
            fields["options"] = DEFAULT_OPTIONS
        options = _checked_options(fields["options"])
        fields["render"] = _checked_render(fields.get("render"), formats, options)
        fields["webhook_events"] = _checked_events(
            fields.get("webhook_events", DEFAULT_WEBHOOK_EVENTS)
        )
        pages = {name: fields.pop(name) for name in _PAGE_FIELDS if name in fields}
        return cls(url=url, pages=PageOptions(**pages), **fields)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for storing the spec with its crawl: every field by its name, the
        pages' options among them as the request named them. ``render``, ``render_options``
        and ``options`` are copied onto every page as a job stores them
        (storage.crawls._page_row; ``options`` holds the request headers); ``webhook_events``
        is read on every page row too (storage.crawls.page_callback)."""
        stored: dict[str, Any] = {}
        for field in fields(self):
            if field.name == "pages":
                stored.update(
                    (option.name, _stored(getattr(self.pages, option.name)))
                    for option in fields(self.pages)
                )
            else:
                stored[field.name] = _stored(getattr(self, field.name))
        # The scrape options last, where every stored spec and every answer has had them.
        stored["options"] = stored.pop("options")
        return stored

    def public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` as it may be shown: the request headers' names only."""
        return {**self.to_dict(), "options": self.pages.options.public()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CrawlSpec:
        """The inverse of :meth:`to_dict` (a stored spec is not checked against today's
        ``max_limit``: it was accepted when it was created). A field a spec was stored without
        is its default."""
        pages = PageOptions(**{option.name: _read_stored(option, data) for option in _PAGE_OPTIONS})
        scope = {field.name: _read_stored(field, data) for field in _SCOPE_FIELDS}
        return cls(pages=pages, **scope)


def _checked_pages(pages: object) -> PageOptions:
    """A crawl's page options, checked as :meth:`CrawlSpec.create` names them."""
    if not isinstance(pages, PageOptions):
        raise InvalidCrawlSpec("pages", "must be a crawl's page options")
    formats = _checked_formats(pages.formats, None)
    if pages.callback_url is not None:
        _checked_url(pages.callback_url, "callback_url")
    max_age = _checked_max_age(pages.max_age)
    if pages.render is None:
        raise InvalidCrawlSpec("render", f"must be one of {', '.join(RENDER_MODES)}")
    _checked_render_options(pages.render_options)
    _checked_render(pages.render, formats, _checked_options(pages.options))
    return replace(pages, formats=formats, max_age=max_age)


_PAGE_OPTIONS = fields(PageOptions)
_PAGE_FIELDS = frozenset(option.name for option in _PAGE_OPTIONS)
_SCOPE_FIELDS = tuple(field for field in fields(CrawlSpec) if field.name != "pages")

#: The names a crawl's fields are asked and stored by: the spec's own, and its pages' job
#: options (a monitor's crawl is refused any other).
CRAWL_FIELDS = frozenset(field.name for field in _SCOPE_FIELDS) | _PAGE_FIELDS

#: The fields :meth:`CrawlSpec.create` takes by name (``url`` is its first argument).
_CREATED_FIELDS = CRAWL_FIELDS - {"url"}


def _stored(value: Any) -> Any:
    """A spec's field as :meth:`CrawlSpec.to_dict` stores it."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, RenderRequest | ScrapeOptions):
        return value.to_json()
    return value


#: How the fields that are not stored as they are, or not stored by every version, are read.
_STORED_FORMS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "sitemap": lambda data: SitemapMode(data.get("sitemap", SitemapMode.INCLUDE)),
    # Stored specs name their formats; the oldest stated none and meant the metadata.
    "formats": lambda data: tuple(data.get("formats", UNSTATED_FORMATS)),
    "render": lambda data: data.get("render") or "never",
    "render_options": lambda data: (
        None
        if data.get("render_options") is None
        else RenderRequest.from_json(data["render_options"])
    ),
    "webhook_events": stored_webhook_events,
    "options": lambda data: ScrapeOptions.from_json(data.get("options")),
}


def _read_stored(field: Field[Any], data: Mapping[str, Any]) -> Any:
    if (read := _STORED_FORMS.get(field.name)) is not None:
        return read(data)
    if field.default is MISSING:
        return data[field.name]
    value = data.get(field.name, field.default)
    return tuple(value) if isinstance(value, list) else value
