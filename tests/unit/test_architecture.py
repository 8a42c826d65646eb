"""The layout's rules (docs/architecture.md), checked on the imports of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "taskcrawler"


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the file (lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def importing(paths: list[Path], prefix: str) -> dict[str, list[str]]:
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(
            name for name in imports_of(path) if name == prefix or name.startswith(prefix + ".")
        )
        for path in paths
    }
    return {path: names for path, names in offenders.items() if names}


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("api", "taskcrawler.storage"),  # routes call services; storage rows never reach HTTP
        ("domain", "taskcrawler.storage"),  # the domain is pure
        ("domain", "taskcrawler.service"),
        ("domain", "taskcrawler.api"),
        ("domain", "taskcrawler.fetch"),
        ("domain", "taskcrawler.extract"),
        ("domain", "taskcrawler.browser"),
        ("extract", "taskcrawler.storage"),  # extraction is pure: bytes in, data out
        ("extract", "taskcrawler.fetch"),
        ("extract", "taskcrawler.browser"),
        ("extract", "taskcrawler.worker"),
        ("browser", "taskcrawler.storage"),  # a renderer fetches and renders; it stores nothing
        ("browser", "taskcrawler.service"),
        ("browser", "taskcrawler.api"),
        ("browser", "taskcrawler.worker"),
        ("embed", "taskcrawler.storage"),  # embedders turn texts into vectors, nothing more
        ("embed", "taskcrawler.service"),
        ("embed", "taskcrawler.worker"),
        ("embed", "taskcrawler.api"),
        ("rerank", "taskcrawler.storage"),  # a reranker scores passages, nothing more
        ("rerank", "taskcrawler.service"),
        ("rerank", "taskcrawler.worker"),
        ("rerank", "taskcrawler.api"),
        ("llm", "taskcrawler.storage"),  # a model client asks a model, nothing more
        ("llm", "taskcrawler.service"),
        ("llm", "taskcrawler.worker"),
        ("llm", "taskcrawler.api"),
        ("websearch", "taskcrawler.storage"),  # a search engine client lists URLs, nothing more
        ("websearch", "taskcrawler.service"),
        ("websearch", "taskcrawler.worker"),
        ("websearch", "taskcrawler.api"),
        ("service", "taskcrawler.api"),
        ("service", "taskcrawler.bootstrap"),  # the composition root builds services, not back
        ("service", "taskcrawler.worker"),  # what both need of an extraction is extract/stored.py
        ("service", "taskcrawler.running"),
        ("storage", "taskcrawler.service"),
        ("worker", "taskcrawler.api"),
        ("worker", "taskcrawler.bootstrap"),  # running.py runs what bootstrap builds
        ("worker", "taskcrawler.running"),
        ("storage", "taskcrawler.worker"),
        ("storage", "taskcrawler.bootstrap"),
    ],
)
def test_layers_import_only_downwards(folder: str, forbidden: str) -> None:
    assert importing(modules(folder), forbidden) == {}


#: Who may import the Firecrawl adapter: the composition root builds its pieces, the app mounts
#: its routes and error answers. The core (domain, services, storage, worker) never does.
FIRECRAWL_WIRING = {"bootstrap.py", "api/app.py"}


def test_only_the_wiring_imports_the_firecrawl_adapter() -> None:
    outside = [
        path
        for path in PACKAGE.rglob("*.py")
        if (PACKAGE / "firecrawl") not in path.parents
        and str(path.relative_to(PACKAGE)) not in FIRECRAWL_WIRING
    ]
    assert importing(outside, "taskcrawler.firecrawl") == {}


def test_the_firecrawl_adapter_is_wired_where_the_rule_says() -> None:
    """A wiring module renamed would otherwise leave the rule above allowing nothing."""
    wired = {
        path for path in FIRECRAWL_WIRING if importing([PACKAGE / path], "taskcrawler.firecrawl")
    }
    assert wired == FIRECRAWL_WIRING


def names_imported_from(path: Path, module: str) -> set[str]:
    """The names ``path`` imports from ``module`` (``from module import name``)."""
    return {
        alias.name
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }


#: The repositories split by who calls them: the API's side, and the workers' side.
API_PORTS = {"JobRepository", "MonitorRepository"}
WORKER_PORTS = {"WorkRepository", "MonitorWorkRepository"}


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [("api", WORKER_PORTS), ("service", WORKER_PORTS), ("worker", API_PORTS)],
)
def test_each_side_asks_storage_through_its_own_ports(folder: str, forbidden: set[str]) -> None:
    asking = {
        str(path.relative_to(PACKAGE)): sorted(
            names_imported_from(path, "taskcrawler.storage.ports") & forbidden
        )
        for path in modules(folder)
    }
    assert {path: names for path, names in asking.items() if names} == {}


@pytest.mark.parametrize(
    ("api_side", "worker_side"),
    [
        ("storage/jobs.py", "taskcrawler.storage.work"),
        ("storage/monitors.py", "taskcrawler.storage.monitor_work"),
    ],
)
def test_the_api_side_of_storage_needs_nothing_of_the_workers_side(
    api_side: str, worker_side: str
) -> None:
    assert importing([PACKAGE / api_side], worker_side) == {}


def test_the_ports_the_rules_name_exist() -> None:
    """A port renamed would otherwise leave the rule above checking for nothing."""
    from taskcrawler.storage import ports

    for name in API_PORTS | WORKER_PORTS:
        assert isinstance(getattr(ports, name), type)


def test_the_ports_import_nothing_of_what_implements_them() -> None:
    """Their value types are the domain's: a port that imported a repository's module would
    tie every repository to every other."""
    assert importing([PACKAGE / "storage" / "ports.py"], "taskcrawler.storage") == {}


#: A backend's type the others may name (a connection the API's group commit keeps).
BACKEND_TYPES = {"taskcrawler.storage.postgres.pinned"}


def test_only_the_adapters_module_picks_a_backend_or_a_chunk_store() -> None:
    shared = [
        path
        for path in modules("storage")
        if not path.is_relative_to(PACKAGE / "storage" / "postgres")
        and not path.is_relative_to(PACKAGE / "storage" / "sqlite")
    ]
    choosing = {
        path: [name for name in names if name not in BACKEND_TYPES]
        for backend in ("taskcrawler.storage.postgres", "taskcrawler.storage.sqlite")
        for path, names in importing(shared, backend).items()
    }
    assert {path for path, names in choosing.items() if names} == {"storage/adapters.py"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(folder: str) -> dict[str, set[str]]:
    """Module -> the modules of ``folder`` it imports (``from pkg import mod`` names mod, not
    pkg: as ``python -m bench.import_cycles`` counts them)."""
    names = {_module_name(path): path for path in modules(folder)}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.update(
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in names
                    else node.module
                    for alias in node.names
                )
        targets = set()
        for target in found:
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def _a_circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (its modules in order), or [] when there is none."""
    done: set[str] = set()
    for root in sorted(graph):
        path: list[str] = []
        stack = [(root, iter(sorted(graph[root])))]
        on_path = {root}
        path.append(root)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return [*path[path.index(child) :], child]
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return []


def test_the_storage_package_has_no_import_circle() -> None:
    """``python -m bench.import_cycles`` lists them all (16 of its modules were one)."""
    assert _a_circle(_import_graph("storage")) == []


def test_the_package_has_no_import_circle() -> None:
    """Each circle was a back-arrow: a value type kept by the module that uses it instead of the
    domain (a crawl's frontier Candidate, now in domain/pages.py), an adapter importing its port
    from the package that picks it (now embed/, llm/, rerank/, websearch/ ``base.py``), the
    commands importing the parser for the way they run (now cli/loop.py)."""
    assert _a_circle(_import_graph(".")) == []


def test_the_circle_check_finds_a_circle() -> None:
    assert _a_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _a_circle({"a": {"b"}, "b": set()}) == []


def test_the_common_helpers_know_nothing_of_the_application() -> None:
    used = {
        path: [name for name in names if not name.startswith("taskcrawler.common")]
        for path, names in importing(modules("common"), "taskcrawler").items()
    }
    assert {path: names for path, names in used.items() if names} == {}


def test_the_api_contract_needs_only_the_domain_and_no_web_framework() -> None:
    """The request and response models are shared by the API, the client, the MCP tools and
    the command line: none of those may pay for the server's layers to read an answer."""
    contract = modules("contract")
    used = {
        path: [
            name
            for name in names
            if not name.startswith(("taskcrawler.contract", "taskcrawler.domain"))
        ]
        for path, names in importing(contract, "taskcrawler").items()
    }
    assert {path: names for path, names in used.items() if names} == {}
    assert importing(contract, "fastapi") == importing(contract, "starlette") == {}


def test_only_the_composition_root_picks_the_queue_and_builds_redis_clients() -> None:
    builders = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "redis_client(" in path.read_text() or "MemoryQueue()" in path.read_text()
    }
    assert builders <= {"bootstrap.py", "queue/redis.py"}


def test_raw_sql_is_sent_only_by_the_backends() -> None:
    senders = {
        str(path.relative_to(PACKAGE))
        for path in (PACKAGE / "storage").rglob("*.py")
        if "exec_driver_sql" in path.read_text() or ".fetch(sql" in path.read_text()
    }
    assert senders
    assert all(sender.startswith(("storage/postgres/", "storage/sqlite/")) for sender in senders)


def test_the_shared_repositories_never_ask_which_database_they_run_on() -> None:
    shared = [p for p in (PACKAGE / "storage").glob("*.py") if p.name != "backend.py"]
    asking = [str(p.relative_to(PACKAGE)) for p in shared if "dialect" in p.read_text()]
    # tables.py: the schema's UTC type stores naive datetimes on SQLite, which has no zones.
    assert asking == ["storage/tables.py"]


def test_the_job_view_shows_fields_of_the_job() -> None:
    from taskcrawler.domain.jobs import Job
    from taskcrawler.domain.views import JobView

    assert set(JobView.model_fields) <= set(Job.__dataclass_fields__)
