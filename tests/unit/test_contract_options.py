"""A job's options are declared by the domain; the API's bodies and the client's keyword
arguments must offer each of them, or an option added there would silently go unasked."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable, Coroutine
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, Literal, get_args, get_origin, get_type_hints
from uuid import uuid4

import pytest
from pydantic import BaseModel

from taskcrawler.cli.commands.crawl import spec_of
from taskcrawler.cli.commands.submit import job_options
from taskcrawler.cli.main import build_parser
from taskcrawler.client import CrawlOptions, JobOptions, _calls
from taskcrawler.contract import jobs as jobs_contract
from taskcrawler.contract import keywords
from taskcrawler.contract.crawls import CrawlIn, CrawlScope
from taskcrawler.contract.jobs import BatchCreate, JobCreate, RunOut
from taskcrawler.contract.keys import KeyCreate
from taskcrawler.contract.links import LinkOut
from taskcrawler.contract.maps import MapIn
from taskcrawler.contract.monitors import MonitorCreate, MonitorPatch
from taskcrawler.contract.options import JOB_OPTIONS, JobOptionFields, JobOptionsIn
from taskcrawler.contract.search import SearchIn
from taskcrawler.contract.web_search import WebSearchIn
from taskcrawler.domain import jobs
from taskcrawler.domain.crawls import CRAWL_FIELDS, CrawlSpec, Sitemap, SitemapMode
from taskcrawler.domain.jobs import JobRun
from taskcrawler.domain.monitors.spec import MONITOR_OWNED_CRAWL_FIELDS
from taskcrawler.domain.pages import StoredLink
from taskcrawler.storage.crawls import _page_template

DOMAIN_OPTIONS = {option.name for option in fields(jobs.JobOptions)}


def test_every_request_with_job_options_takes_each_of_the_domains() -> None:
    assert set(JOB_OPTIONS) == DOMAIN_OPTIONS
    assert set(JobOptionsIn.model_fields) == DOMAIN_OPTIONS
    for body in (JobCreate, BatchCreate, WebSearchIn, CrawlIn):
        assert set(body.model_fields) >= DOMAIN_OPTIONS, body.__name__


def test_a_crawl_keeps_each_job_option_it_asks_of_its_pages() -> None:
    """A crawl asks a job's options of its pages (:class:`PageOptions` is a
    :class:`~taskcrawler.domain.jobs.JobOptions`); each one given is stored with the crawl by
    its name, and read back: an option whose value JSON cannot hold, or that a stored spec
    reads as another, fails here until it has its stored form."""
    asked = JobOptionsIn.model_validate(EVERY_OPTION).job_options()
    given = {name: getattr(asked, name) for name in DOMAIN_OPTIONS}
    spec = CrawlSpec.create("https://example.com/", **given)
    stored = json.loads(json.dumps(spec.to_dict()))
    assert set(stored) == CRAWL_FIELDS >= DOMAIN_OPTIONS
    assert CrawlSpec.from_dict(stored) == spec
    assert {name: getattr(spec.pages, name) for name in DOMAIN_OPTIONS} == given


#: The job options a crawl's pages take from the crawl's spec when a worker reads them, not
#: from their own row: a page fetched within ``max_age`` is reused (worker/crawling.py).
READ_FROM_THE_CRAWLS_SPEC = {"max_age"}


def test_a_crawl_hands_each_job_option_it_asks_to_its_pages() -> None:
    """Each job option a crawl (or a crawl monitor's crawl, which starts its crawls the same
    way) accepts reaches its pages: copied onto every page's row from the stored spec, or read
    from the spec by the worker. A new option fails here until it is one or the other, rather
    than being accepted and silently dropped."""
    asked = JobOptionsIn.model_validate(EVERY_OPTION).job_options()
    given = {name: getattr(asked, name) for name in DOMAIN_OPTIONS}
    # A page carries the callback URL when the crawl announces its pages (page_callback).
    spec = CrawlSpec.create("https://example.com/", webhook_events=["crawl.page"], **given)
    stored = json.loads(json.dumps(spec.to_dict()))
    page = _page_template(uuid4(), "", stored, datetime.now(UTC), 1.0)
    copied = DOMAIN_OPTIONS - READ_FROM_THE_CRAWLS_SPEC
    assert {name: page.get(name) for name in copied} == {name: stored[name] for name in copied}
    assert READ_FROM_THE_CRAWLS_SPEC <= DOMAIN_OPTIONS


def test_a_crawl_is_stored_and_shown_with_its_fields_in_their_order() -> None:
    """A monitor's crawl is answered as it is stored (clients may read the keys in order): a
    field added later may come anywhere, those stored so far keep their order."""
    stored = list(CrawlSpec("https://example.com/").to_dict())
    kept = [
        "url",
        "max_depth",
        "limit",
        "include_paths",
        "exclude_paths",
        "allow_subdomains",
        "allow_external",
        "sitemap",
        "formats",
        "callback_url",
        "max_age",
        "render",
        "render_options",
        "webhook_events",
        "options",
    ]
    assert [name for name in stored if name in kept] == kept
    assert stored[-1] == "options"


def test_the_client_passes_each_job_option() -> None:
    assert set(get_type_hints(JobOptions)) == DOMAIN_OPTIONS


def test_the_clients_keyword_types_are_written_from_the_request_models() -> None:
    """The client's keyword TypedDicts are generated: one that no longer matches its models
    (an option added, a description changed) fails here until it is written again."""
    assert keywords.module_source() == keywords.TARGET.read_text(encoding="utf-8"), (
        "run .venv/bin/python -m taskcrawler.contract.keywords"
    )


def test_the_clients_crawl_options_are_the_crawl_requests_fields() -> None:
    assert set(get_type_hints(CrawlOptions)) | {"url"} == set(CrawlIn.model_fields)
    assert set(CrawlIn.model_fields) == set(CrawlScope.model_fields) | DOMAIN_OPTIONS


#: A request giving every job option a value other than its default (a new option fails the
#: tests below until it is given one here).
EVERY_OPTION = {
    "formats": ["text", "links"],
    "callback_url": "https://hooks.example.net/done",
    "max_age": 60,
    "render": "always",
    "render_options": {"wait_seconds": 2},
    "options": {"only_main_content": False},
}


def test_a_request_hands_every_option_it_was_given_to_the_domain() -> None:
    asked = JobOptionsIn.model_validate(EVERY_OPTION).job_options()
    default = jobs.JobOptions()
    unchanged = [name for name in DOMAIN_OPTIONS if getattr(asked, name) == getattr(default, name)]
    assert unchanged == []
    assert asked.formats == ("text", "links")
    assert asked.render_options is not None and asked.render_options.wait_seconds == 2
    assert asked.options is not None and not asked.options.only_main_content


def test_a_monitors_crawl_reads_each_option_it_asks_of_its_pages_as_a_jobs() -> None:
    """A crawl monitor sets some of its pages' options itself; the others its crawl gives as a
    crawl does, checked and converted as a job's are (not handed on as raw JSON)."""
    given = {n: v for n, v in EVERY_OPTION.items() if n not in MONITOR_OWNED_CRAWL_FIELDS}
    assert given
    asked = JobOptionsIn.model_validate(given).job_options()
    body = MonitorCreate(interval_seconds=3600, crawl={"url": "https://example.com/", **given})
    assert body.crawl == {
        "url": "https://example.com/",
        **{name: getattr(asked, name) for name in given},
    }


def test_a_crawls_formats_keep_their_own_default() -> None:
    """A crawl always names its pages' formats; a job left without them may mean "those the
    URL's job has"."""
    assert CrawlIn(url="https://example.com/").formats == ["metadata", "markdown"]
    assert JobOptionsIn().formats is None


def test_links_and_runs_are_shown_with_the_fields_they_are_kept_with() -> None:
    assert list(LinkOut.model_fields) == list(StoredLink.model_fields)
    assert list(RunOut.model_fields) == list(JobRun.model_fields)


#: An MCP tool's function: a client and the tool's arguments in, its answer out.
Tool = Callable[[Any, Any], Coroutine[Any, Any, Any]]


class _Sent:
    """A client that keeps what a tool asks of it, and answers nothing."""

    def __init__(self) -> None:
        self.asked: dict[str, Any] = {}

    async def submit(self, url: str, **options: Any) -> None:
        self.asked = {"url": url, **options}
        raise _Stop

    async def start_crawl(self, url: str, **options: Any) -> None:
        self.asked = {"url": url, **options}
        raise _Stop


class _Stop(Exception):
    pass


def _asked_by(tool: Tool, args: BaseModel) -> dict[str, Any]:
    client = _Sent()
    with pytest.raises(_Stop):
        asyncio.run(tool(client, args))
    return client.asked


@pytest.mark.parametrize("name", ["scrape", "crawl"])
def test_the_mcp_tools_send_each_field_of_their_request_model(name: str) -> None:
    """A field added to the API's request model is sent by the tool built on it, unlisted."""
    # Imported here: the MCP SDK costs ~0.7 s of CPU to import, and every test process imports
    # this module to collect it.
    from taskcrawler.mcp_server import tools

    unsent = tools.TOOL_ONLY_SCRAPE_ARGS if name == "scrape" else frozenset()
    spec = tools.TOOLS[name]
    tool, model = spec.run, spec.args

    class Grown(model):  # type: ignore[valid-type,misc]
        added: int | None = None

    asked = _asked_by(tool, Grown(url="https://example.com/", added=7))
    assert asked["added"] == 7
    assert set(asked) == set(Grown.model_fields) - unsent


def test_a_sitemap_mode_is_spelled_as_the_domain_names_it() -> None:
    assert get_args(Sitemap) == tuple(mode.value for mode in SitemapMode)


def _subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = commands.choices[name]
    return found


def _literal_values(annotation: Any) -> set[Any]:
    """Every value a Literal anywhere in ``annotation`` allows (``list[Format] | None``: the
    formats)."""
    if get_origin(annotation) is Literal:
        return set(get_args(annotation))
    return {value for inner in get_args(annotation) for value in _literal_values(inner)}


@pytest.mark.parametrize(("command", "model"), [("submit", JobOptionFields), ("crawl", CrawlIn)])
def test_the_command_lines_choices_are_the_apis(command: str, model: type[BaseModel]) -> None:
    """A flag named after a request field offers only values the API takes for it."""
    flags = [
        action
        for action in _subcommand(command)._actions
        if action.dest in model.model_fields and action.choices is not None
    ]
    assert {action.dest for action in flags} >= {"formats", "render"}
    for action in flags:
        allowed = _literal_values(model.model_fields[action.dest].annotation)
        assert set(action.choices or ()) <= allowed, action.dest


def test_a_flag_named_after_a_request_field_is_sent_unlisted() -> None:
    crawl = build_parser().parse_args(["crawl", "https://example.com/"])
    crawl.allow_external = True
    assert spec_of(crawl, "https://example.com/")["allow_external"] is True
    submit = build_parser().parse_args(["submit", "https://example.com/"])
    submit.callback_url = "https://hooks.example.net/done"
    assert job_options(submit) == {"callback_url": "https://hooks.example.net/done"}


def test_a_crawl_request_gives_the_domain_each_field_of_its_spec() -> None:
    given = CrawlIn(url="https://example.com/", render_options={"wait_seconds": 2}).spec_fields()
    assert set(given) == CRAWL_FIELDS
    spec = CrawlSpec.create(**{name: value for name, value in given.items() if value is not None})
    assert spec.pages.render_options is not None and spec.pages.render_options.wait_seconds == 2


@pytest.mark.parametrize(
    ("keywords", "body", "positional"),
    [
        (_calls.WebSearchOptions, WebSearchIn, {"query"}),
        (_calls.MapOptions, MapIn, {"url"}),
        (_calls.MonitorOptions, MonitorCreate, {"interval_seconds"}),
        (_calls.MonitorChanges, MonitorPatch, set()),
        (_calls.KeyOptions, KeyCreate, {"name"}),
        (_calls.SearchOptions, SearchIn, {"q"}),
        (_calls.CancelFilter, jobs_contract.CancelFilter, set()),
        (_calls.RetryFilter, jobs_contract.RetryFilter, set()),
    ],
)
def test_each_clients_keywords_are_its_requests_fields(
    keywords: type, body: type[BaseModel], positional: set[str]
) -> None:
    """A client method's typed keyword arguments must list their keys (a TypedDict); they are
    the fields of the request they make, but for its positional arguments (and a filter's
    ``statuses``, which the API names ``status``)."""
    named = {"status" if name == "statuses" else name for name in get_type_hints(keywords)}
    assert named | positional == set(body.model_fields)
