"""The documentation says only true things: every variable, command, endpoint and metric it names
exists, every setting is documented, and the generated references match the code."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from prometheus_client import CollectorRegistry

from taskcrawler.api import create_app
from taskcrawler.cli.main import build_parser
from taskcrawler.domain.errors import FIXES, ErrorCode
from taskcrawler.observability import ApiMetrics, QueueDepth, WorkerMetrics
from taskcrawler.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
VARIABLE = re.compile(r"\bTASKCRAWLER_[A-Z0-9_]*[A-Z0-9]")
#: Variables that are not settings of the service: the CLI client's key and the test suite's.
NOT_SETTINGS = {
    "TASKCRAWLER_API_KEY": ROOT / "taskcrawler/cli/commands/__init__.py",
    "TASKCRAWLER_TEST_DATABASE_URL": ROOT / "tests/support/services.py",
    "TASKCRAWLER_TEST_REDIS_URL": ROOT / "tests/support/services.py",
    "TASKCRAWLER_TEST_FORCE_THROWAWAY": ROOT / "tests/support/services.py",
}


#: Pages that name no ``taskcrawler`` command (every other page of docs/ names one, so the
#: command check is known to have run on it).
PAGES_WITHOUT_COMMANDS = {"api.md", "README.md", "webhooks.md", "development.md"}


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settings_variables() -> dict[str, str]:
    """Every variable a setting reads -> the field's name."""
    gen = generator()
    return {
        env: name
        for name, field in Settings.model_fields.items()
        for env in gen.env_names(name, field)
    }


def code_of(text: str) -> list[str]:
    """Fenced blocks and inline code spans: where commands are written."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.M | re.S)
    return fenced + re.findall(r"`([^`\n]+)`", prose)


def page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_generated_references_are_up_to_date() -> None:
    gen = generator()
    for path, render in gen.TARGETS.items():
        assert path.read_text() == render(), (
            f"{page_id(path)} is out of date: run .venv/bin/python docs/gen_reference.py"
        )


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_variable_mentioned_exists(page: Path) -> None:
    known = settings_variables()
    for name in set(VARIABLE.findall(page.read_text())) - set(known):
        assert name in NOT_SETTINGS, f"{page_id(page)} mentions {name}, which no setting reads"
        assert name in NOT_SETTINGS[name].read_text(), f"{name} is not used any more"


def test_every_setting_is_documented() -> None:
    text = (DOCS / "reference/configuration.md").read_text()
    missing = [env for env in settings_variables() if env.startswith("TASKCRAWLER_")]
    missing = [env for env in missing if f"`{env}`" not in text]
    assert not missing, f"docs/reference/configuration.md does not document {missing}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_documented_defaults_are_the_real_ones(page: Path) -> None:
    """Tables of `| VARIABLE | default | …` rows, in any page, show the setting's default."""
    gen = generator()
    fields = Settings.model_fields
    known = settings_variables()
    for variable, default in re.findall(
        r"^\| `(TASKCRAWLER_\w+)` \| ([^|]+) \|", page.read_text(), re.M
    ):
        if page.name == "configuration.md":
            continue  # generated, with a type column
        expected = gen._default(fields[known[variable]])
        shown = default.strip()
        if expected == "unset":
            assert shown.startswith("unset"), f"{page_id(page)}: {variable} shows {shown}"
        else:
            assert shown == expected, f"{page_id(page)}: {variable} shows {shown}, not {expected}"


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def command_exists(words: list[str]) -> bool:
    """``keys create`` exists if ``keys`` is a command and ``create`` one of its actions."""
    parser = build_parser()
    for word in words:
        children = _commands(parser)
        if not children:
            return True  # the rest are arguments
        if word not in children:
            return False
        parser = children[word]
    return True


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_command_mentioned_exists(page: Path) -> None:
    mention = re.compile(r"(?:^|(?<=[\s/`(]))taskcrawler((?:[ \t]+[a-z][a-z0-9-]*)+)", re.M)
    seen = 0
    for code in code_of(page.read_text()):
        for words in mention.findall(code):
            seen += 1
            assert command_exists(words.split()), f"{page_id(page)}: taskcrawler{words}"
    assert seen or page.name in PAGES_WITHOUT_COMMANDS or "docs" not in page.parts


def unknown_options(words: list[str]) -> list[str]:
    """The ``--options`` of a command line that its (sub)command does not take."""
    parser = build_parser()
    while words and words[0] in _commands(parser):
        parser, words = _commands(parser)[words[0]], words[1:]
    known = {option for action in parser._actions for option in action.option_strings}
    asked = [word.split("=", 1)[0] for word in words if word.startswith("--")]
    return [option for option in asked if option not in known]


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_option_mentioned_exists(page: Path) -> None:
    line = re.compile(r"(?:^|(?<=[\s/`(]))taskcrawler((?:[ \t]+[^\s`|;&#)]+)+)", re.M)
    for code in code_of(page.read_text()):
        for words in line.findall(code):
            wrong = unknown_options(words.split())
            assert not wrong, f"{page_id(page)}: taskcrawler{words} takes no {wrong}"


def test_the_option_check_catches_a_wrong_option() -> None:
    assert unknown_options(["submit", "--wait", "--format=text"]) == []
    assert unknown_options(["submit", "--waitt", "https://example.com"]) == ["--waitt"]


def test_the_command_check_catches_a_wrong_command() -> None:
    assert command_exists(["keys", "create"]) and command_exists(["worker"])
    assert not command_exists(["keys", "make"]) and not command_exists(["crawlz"])


def test_api_reference_lists_every_endpoint() -> None:
    schema = create_app(Settings()).openapi()
    real = {(method.upper(), path) for path, ops in schema["paths"].items() for method in ops}
    real.add(("GET", "/docs"))
    documented = set(
        re.findall(
            r"^\| `([A-Z]+)` \| `(/[^`]*)` \|", (DOCS / "reference/api.md").read_text(), re.M
        )
    )
    assert documented - real == set(), "documented but not served"
    assert real - documented == set(), "served but not documented"


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : None if end < 0 else end]


def test_every_error_code_is_listed_and_every_fix_has_a_row() -> None:
    """The API reference lists every code a job can fail with (``http_4xx`` is spelled
    ``http_<status>``), and its table of fixes has a row for every code with a fix and none
    for a code that does not exist."""
    reference = (DOCS / "reference/api.md").read_text()
    listed = reference[reference.index("`error_code` values are the stable codes") :]
    unlisted = [
        code for code in ErrorCode if code != ErrorCode.HTTP_4XX and f"`{code}`" not in listed
    ]
    assert not unlisted, f"docs/reference/api.md does not list the error codes {unlisted}"
    table = _section(reference, "## Errors that say what to do")
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \| ", table, re.M)) - {"error_code"}  # the header
    assert rows, "the table of fixes was not found"
    assert set(FIXES) - rows == set(), "codes with a fix that the table does not show"
    assert rows - set(ErrorCode) == set(), "rows for codes that do not exist"


def test_api_reference_names_every_field_of_a_request_body() -> None:
    """Each ``/api/`` row with a JSON body names every field of it, so that none is hidden."""
    schema = create_app(Settings()).openapi()
    models = schema["components"]["schemas"]
    rows = re.findall(
        r"^\| `([A-Z]+)` \| `(/api/[^`]*)` \| (.*)$",
        (DOCS / "reference/api.md").read_text(),
        re.M,
    )
    checked = 0
    for method, path, row in rows:
        body = schema["paths"][path][method.lower()].get("requestBody")
        if body is None:
            continue
        name = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        named = set(re.findall(r"[`\"]([a-z_]+)[`\"]", row.replace('`{"', '`"')))
        missing = set(models[name]["properties"]) - named
        assert not missing, f"{method} {path}: docs/reference/api.md does not name {missing}"
        checked += 1
    assert checked >= 10


def firecrawl_endpoints(text: str) -> set[tuple[str, str]]:
    """(METHOD, path) of every endpoint the Firecrawl page's table names, its shorthands
    spelled out: ``v{1,2}``, ``(and v1)``, ``GET /v2/…`` (the previous path under v2) and
    ``…/token-usage`` (the previous path with as many segments replaced)."""
    found: set[tuple[str, str]] = set()
    for cell in re.findall(r"^\| (`[A-Z]+ /[^|]*?) \| ", _section(text, "## Endpoints"), re.M):
        method, previous = "", ""
        for item in re.findall(r"`([^`]+)`", cell):
            if " " in item:
                method, item = item.split(" ", 1)
            if item.startswith("…/"):
                tail = item[2:].split("/")
                item = "/".join(previous.split("/")[: -len(tail)] + tail)
            elif item.endswith("/…"):
                item = item[:-2] + "/" + previous.split("/", 2)[2]
            previous = item
            versions = ["v1", "v2"] if item.startswith("/v{1,2}/") else [item.split("/")[1]]
            if "(and v1)" in cell:
                versions.append("v1")
            rest = item.split("/", 2)[2]
            found |= {(method, re.sub(r"\{\w+\}", "{id}", f"/{v}/{rest}")) for v in versions}
    return found


def test_firecrawl_reference_lists_every_firecrawl_endpoint() -> None:
    schema = create_app(Settings()).openapi()
    real = {
        (method.upper(), re.sub(r"\{\w+\}", "{id}", path))
        for path, ops in schema["paths"].items()
        if re.match(r"/v[12]/", path)
        for method in ops
    }
    documented = firecrawl_endpoints((DOCS / "reference/firecrawl.md").read_text())
    assert ("GET", "/v1/team/token-usage/historical") in documented  # the shorthands are read
    assert documented - real == set(), "documented but not served"
    assert real - documented == set(), "served but not documented"


def test_every_metric_mentioned_exists_and_every_metric_is_documented() -> None:
    registry = CollectorRegistry()
    ApiMetrics(registry), WorkerMetrics(registry), QueueDepth(registry)
    suffixes = {
        "counter": ["_total"],
        "gauge": [""],
        "histogram": ["", "_bucket", "_sum", "_count"],
    }
    families = list(registry.collect())
    exported = {f.name + suffix for f in families for suffix in suffixes[f.type]}
    for page in PAGES:
        for metric in re.findall(r"\btaskcrawler_[a-z_]+[a-z]", page.read_text()):
            assert metric in exported, f"{page_id(page)} mentions {metric}, which is not exported"
    reference = (DOCS / "reference/api.md").read_text()
    for family in families:
        assert f"`{family.name}{suffixes[family.type][0]}`" in reference


def test_the_readme_is_a_five_minute_page_that_links_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, "the README's details belong in docs/"
    for words in ("make serve", "make test", "curl", "(docs/README.md)"):
        assert words in readme


def test_the_docs_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text()
    for page in PAGES:
        if page.parent != ROOT and page != DOCS / "README.md":
            assert f"]({page.relative_to(DOCS)})" in index, f"docs/README.md does not list {page}"


def test_every_link_between_pages_leads_to_one() -> None:
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if page.parent == DOCS.parent and not target.startswith("docs/"):
                continue  # the README's other links are not the docs' business
            assert (page.parent / target).exists(), f"{page_id(page)} links {target}"


def test_every_document_named_is_in_the_repository() -> None:
    """The repository's documents stand on their own: a page, the changelog or pyproject.toml
    naming a Markdown file (a link or in prose) names one that ships with them."""
    shipped = {
        path.name
        for path in ROOT.rglob("*.md")
        if not {".venv", ".git", "node_modules"} & set(path.relative_to(ROOT).parts)
    }
    sources = [*PAGES, ROOT / "CHANGELOG.md", ROOT / "pyproject.toml"]
    for source in sources:
        for named in re.findall(r"[\w./-]*?([\w-]+\.md)\b", source.read_text()):
            assert named in shipped, f"{page_id(source)} names {named}, not in the repository"
