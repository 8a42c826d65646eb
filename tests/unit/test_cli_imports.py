"""What the command line imports before it does anything: a client command is a client.

``taskcrawler jobs list`` starts a new interpreter every time a user runs it; what it imports is
most of what it costs. Building the parser, and running a client command, must not load the
server's layers and their libraries (they cost a second of CPU a call); ``taskcrawler keys`` needs
the database, not the fetcher, the queue or the web framework. ``taskcrawler worker`` (and the
worker process of ``serve``) serves no API: the web framework is a tenth of a second of CPU at each
of its starts. Neither it nor the API imports Redis or PostgreSQL's driver before a deployment has
them: embedded mode (SQLite, no Redis) starts without either. The API's parser processes (a
map's start page and sitemaps) import what they parse with, not the fetcher or the database.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.processes import clean_env

#: A fresh interpreter imports these in turn and prints what each step loaded.
STEPS = {
    "parser": ["taskcrawler.cli.main"],
    "client command": ["taskcrawler.cli.commands.jobs", "taskcrawler.cli.commands.submit"],
    "keys command": ["taskcrawler.bootstrap", "taskcrawler.service.keys"],
    "worker command": ["taskcrawler.running", "taskcrawler.worker.runner"],
    "serve command": ["taskcrawler.api", "taskcrawler.cli.embedded_worker"],
}
SERVER = ("taskcrawler.api", "taskcrawler.worker", "taskcrawler.fetch", "taskcrawler.extract")
SERVER_LIBRARIES = (
    "fastapi", "starlette", "uvicorn", "aiohttp", "redis", "alembic", "prometheus_client",
    "jsonschema", "selectolax",
)  # fmt: skip
DATABASE = ("sqlalchemy", "taskcrawler.storage", "taskcrawler.service", "taskcrawler.bootstrap")
CLIENT_LIBRARIES = ("httpx", "rich")
WEB_FRAMEWORK = ("fastapi", "starlette", "uvicorn")

_SCRIPT = """
import importlib, json, sys
steps, seen = json.loads(sys.argv[1]), set(sys.modules)
loaded = {}
for step, modules in steps.items():
    for module in modules:
        importlib.import_module(module)
    loaded[step] = sorted(set(sys.modules) - seen)
print(json.dumps(loaded))
"""


def _loaded(steps: dict[str, list[str]] = STEPS) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(steps)],
        env=clean_env(), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    loaded: dict[str, list[str]] = json.loads(done.stdout)
    return loaded


def _among(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(
        {
            package
            for package in packages
            for m in modules
            if m == package or m.startswith(package + ".")
        }
    )


def test_the_parser_and_the_client_commands_import_no_server_and_keys_no_fetcher() -> None:
    loaded = _loaded()
    parser, client, keys = loaded["parser"], loaded["client command"], loaded["keys command"]
    assert "taskcrawler.cli.main" in parser and "taskcrawler.cli.commands.jobs" in client
    assert _among(parser, SERVER + SERVER_LIBRARIES + DATABASE + CLIENT_LIBRARIES) == []
    assert _among(parser + client, SERVER + SERVER_LIBRARIES + DATABASE) == []
    assert _among(client, CLIENT_LIBRARIES) == list(CLIENT_LIBRARIES)  # the check sees imports
    assert _among(keys, SERVER + SERVER_LIBRARIES) == []
    assert "sqlalchemy" in _among(keys, DATABASE)


def test_the_worker_command_imports_no_web_framework() -> None:
    worker = _loaded()["worker command"]
    assert "taskcrawler.worker.worker" in worker and "aiohttp" in _among(worker, SERVER_LIBRARIES)
    assert _among(worker, WEB_FRAMEWORK) == []


def test_the_server_commands_import_redis_and_asyncpg_only_for_a_deployment_with_them() -> None:
    serve = _loaded()["serve command"]
    assert "taskcrawler.api.app" in serve and "taskcrawler.storage.errors" in serve
    assert _among(serve, ("redis", "taskcrawler.queue.redis", "asyncpg")) == []


def test_the_apis_parser_processes_import_no_fetcher_and_no_database() -> None:
    from taskcrawler.service.map_parsing import PARSED_IN_PROCESSES

    steps = {"parser process": ["taskcrawler.common.processes", *PARSED_IN_PROCESSES]}
    loaded = _loaded(steps)["parser process"]
    assert "taskcrawler.service.map_parsing" in loaded and "taskcrawler.extract.sitemaps" in loaded
    fetching_or_storing = ("taskcrawler.fetch", "taskcrawler.storage", "aiohttp", "sqlalchemy")
    assert _among(loaded, ("taskcrawler.api", "taskcrawler.worker", *fetching_or_storing)) == []
