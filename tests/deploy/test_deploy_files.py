"""The Docker and monitoring files, tested without a Docker engine: the Compose file parses and
names only commands and settings that exist, and the image's entry commands (migrate, api,
worker, keys, and both healthchecks) run as plain processes against the test's PostgreSQL/Redis."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from taskcrawler.cli.main import build_parser
from taskcrawler.observability import ApiMetrics, QueueDepth, WorkerMetrics, process_registry
from taskcrawler.settings import Settings
from tests.support.processes import ProcessManager, clean_env
from tests.support.services import free_port
from tests.support.target import TargetServer

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DEPLOY = ROOT / "deploy"
TASKCRAWLER_SERVICES = ("migrate", "api", "worker")


# --- reading the files ----------------------------------------------------------------------


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) with continuation lines joined and comments dropped."""
    logical, current = [], ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        logical.append(current)
        current = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in logical]


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (name, _) in enumerate(instructions) if name == "FROM")
    return instructions[last_from:]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for name, rest in final_stage():
        if name == "ENV":
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def dockerfile_exec(instruction: str) -> list[str]:
    """The exec-form command of CMD, or of HEALTHCHECK (after its options)."""
    (rest,) = [rest for name, rest in final_stage() if name == instruction]
    if instruction == "HEALTHCHECK":
        rest = rest[rest.index("CMD ") + len("CMD ") :]
    command: list[str] = json.loads(rest)
    return command


def compose_env(service: str) -> dict[str, str]:
    return {
        key: str(value) for key, value in (services()[service].get("environment") or {}).items()
    }


def healthcheck(service: str) -> list[str]:
    test: list[str] = services()[service]["healthcheck"]["test"]
    assert test[0] in ("CMD", "CMD-SHELL")
    return test[1:]


def setting_env_names() -> set[str]:
    names = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        choices = getattr(alias, "choices", None)
        names |= {str(c) for c in choices} if choices else {f"TASKCRAWLER_{name.upper()}"}
    return {n for n in names if n.startswith("TASKCRAWLER_")}


def parses(argv: list[str]) -> bool:
    try:
        build_parser().parse_args(argv)
    except SystemExit:
        return False
    return True


# --- the files say only true things ---------------------------------------------------------


def test_compose_has_the_production_shape() -> None:
    found = services()
    assert {"postgres", "redis", "migrate", "api", "worker", "prometheus", "grafana"} <= set(found)
    assert found["postgres"]["image"] == "pgvector/pgvector:pg16"  # vectors for chunks
    assert found["redis"]["image"] == "redis:7"
    for dependency in ("postgres", "redis"):
        assert found[dependency]["healthcheck"]["test"]
    assert any(v.startswith("pgdata:") for v in found["postgres"]["volumes"])
    assert "pgdata" in compose()["volumes"]
    assert found["migrate"]["restart"] == "no"
    assert found["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for service in ("api", "worker"):
        assert found[service]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
        assert found[service]["image"] == found["migrate"]["image"]  # one image, built once
    assert found["api"]["ports"] == ["8000:8000"]
    assert compose_env("api")["TASKCRAWLER_AUTH_REQUIRED"] == "true"
    # `docker compose up --scale worker=4` needs no fixed name and no published port.
    assert "container_name" not in found["worker"] and "ports" not in found["worker"]


def test_every_taskcrawler_command_exists() -> None:
    commands = [services()[name]["command"] for name in TASKCRAWLER_SERVICES]
    commands.append(dockerfile_exec("CMD"))
    header = COMPOSE.read_text().split("\nname:")[0]  # the usage lines at the top
    commands += [
        shlex.split(m) for m in re.findall(r"(taskcrawler [a-z][^#\n]*?)\s*(?:#|$)", header, re.M)
    ]
    assert len(commands) >= 5
    for command in commands:
        assert command[0] == "taskcrawler", command
        assert parses(command[1:]), f"not a taskcrawler command: {command}"
    assert dockerfile_exec("CMD") == ["taskcrawler", "api", "--host", "0.0.0.0"]


def test_every_variable_set_is_a_setting_with_a_valid_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    known = setting_env_names()
    for service in TASKCRAWLER_SERVICES:
        env = dockerfile_env() | compose_env(service)  # what the container sees
        ours = {k: v for k, v in env.items() if k.startswith("TASKCRAWLER_")}
        assert set(ours) <= known, set(ours) - known
        for name in known:
            monkeypatch.delenv(name, raising=False)
        for key, value in ours.items():
            monkeypatch.setenv(key, value)
        settings = Settings(_env_file=None)  # type: ignore[call-arg]  # validates every value
        assert settings.auth_required is True  # the image refuses an open API
        assert settings.log_format == "json"
        assert settings.redis_url == "redis://redis:6379/0"


def test_healthchecks_use_python_not_curl() -> None:
    for command in (dockerfile_exec("HEALTHCHECK"), healthcheck("worker")):
        assert command[:2] == ["python", "-c"] and "urllib.request" in command[2]
        assert "curl" not in " ".join(command)
    final = [name for name, _ in final_stage()]
    assert "USER" in final and final.index("USER") < final.index("CMD")
    (user,) = [rest for name, rest in final_stage() if name == "USER"]
    assert user not in ("root", "0")
    (first,) = [rest for name, rest in dockerfile_instructions() if name == "FROM"][:1]
    assert first.startswith("python:3.11-slim AS builder")


def test_the_image_can_render_pages() -> None:
    """Debian's chromium is installed as root before USER, and an init reaps what a killed
    browser leaves (a Python PID 1 would not)."""
    final = final_stage()
    names = [name for name, _ in final]
    (install,) = [i for i, (name, rest) in enumerate(final) if name == "RUN" and "chromium" in rest]
    command = final[install][1]
    assert re.search(
        r"apt-get update .*apt-get install -y --no-install-recommends .*\bchromium\b", command
    )
    assert "rm -rf /var/lib/apt/lists/*" in command
    assert install < names.index("USER")
    (entrypoint,) = [rest for name, rest in final if name == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["/usr/bin/tini", "--"]
    assert re.search(r"\btini\b", command)


def test_prometheus_scrapes_the_api_and_every_worker() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["taskcrawler-api"]["static_configs"][0]["targets"] == ["api:8000"]
    (workers,) = jobs["taskcrawler-worker"]["dns_sd_configs"]
    assert workers["names"] == ["worker"]
    assert workers["port"] == int(compose_env("worker")["TASKCRAWLER_WORKER_METRICS_PORT"])


def test_grafana_dashboard_queries_only_metrics_that_exist() -> None:
    registry = process_registry()
    ApiMetrics(registry), WorkerMetrics(registry), QueueDepth(registry)
    suffixes = {"counter": ["_total"], "gauge": [""], "histogram": ["_bucket", "_sum", "_count"]}
    exposed = {
        family.name + suffix for family in registry.collect() for suffix in suffixes[family.type]
    }

    datasources = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text()
    )["datasources"]
    uids = {source["uid"] for source in datasources}
    provider = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/dashboards/taskcrawler.yml").read_text()
    )["providers"][0]
    mounts = services()["grafana"]["volumes"]
    assert f"./deploy/grafana/dashboards:{provider['options']['path']}:ro" in mounts

    dashboard = json.loads((DEPLOY / "grafana/dashboards/taskcrawler.json").read_text())
    titles = " ".join(panel["title"] for panel in dashboard["panels"]).lower()
    topics = ("throughput", "failures by error code", "queue depth", "latency", "cpu", "memory")
    for topic in topics:
        assert topic in titles
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            assert target["datasource"]["uid"] in uids
            for metric in re.findall(r"(?:taskcrawler|process)_[a-z_]+", target["expr"]):
                assert metric in exposed, f"{panel['title']}: {metric} is not exported"


# --- the image's entry commands, run as plain processes -------------------------------------


def local(command: list[str]) -> list[str]:
    """What the container runs, with this interpreter: `taskcrawler` and `python` resolved."""
    if command[0] == "taskcrawler":
        return [sys.executable, "-m", "taskcrawler", *command[1:]]
    if command[0] == "python":
        return [sys.executable, *command[1:]]
    return command


async def run_once(command: list[str], env: Mapping[str, str], within: float = 60.0) -> str:
    result = await asyncio.to_thread(
        subprocess.run,
        local(command),
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=within,
        check=False,
    )
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stderr}"
    return result.stdout


async def test_image_entry_commands_run(
    pg_url: str,
    redis_url: str,
    redis_prefix: str,
    target: TargetServer,
    processes: ProcessManager,
    tmp_path: Path,
) -> None:
    api_port, metrics_port = free_port(), free_port()
    adapted = {  # the compose network's addresses, replaced by the test's services
        "TASKCRAWLER_DATABASE_URL": pg_url,
        "TASKCRAWLER_REDIS_URL": redis_url,
        "TASKCRAWLER_REDIS_PREFIX": redis_prefix,
        "TASKCRAWLER_PORT": str(api_port),
        "TASKCRAWLER_WORKER_METRICS_PORT": str(metrics_port),
        "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",  # the target is on loopback
        "TASKCRAWLER_RESPECT_ROBOTS": "false",
        # One process: the n-th of several serves its metrics on the port + n, and which of
        # them takes the job is chance.
        "TASKCRAWLER_WORKER_PROCESSES": "1",
    }

    def env_of(service: str) -> dict[str, str]:
        return dockerfile_env() | compose_env(service) | adapted

    await run_once(services()["migrate"]["command"], env_of("migrate"))
    api = processes.start_command(local(dockerfile_exec("CMD")), env_of("api"), name="api")
    worker = processes.start_command(
        local(services()["worker"]["command"]), env_of("worker"), name="worker"
    )
    await api.wait_for_http(f"http://127.0.0.1:{api_port}/healthz")
    await worker.wait_for_http(f"http://127.0.0.1:{metrics_port}/healthz")

    # The healthchecks, exactly as the image and the compose file run them.
    await run_once(dockerfile_exec("HEALTHCHECK"), env_of("api"), within=10)
    await run_once(healthcheck("worker"), env_of("worker"), within=10)

    # Auth is on: a key made the way the compose file's header says, then a job end to end.
    token = (
        await run_once(["taskcrawler", "keys", "create", "--name", "me", "--admin"], env_of("api"))
    ).strip()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}") as client:
        url = target.url("/page/7")
        refused = await client.post("/api/v1/jobs", json={"url": url})
        assert refused.status_code == 401
        headers = {"Authorization": f"Bearer {token}"}
        created = await client.post("/api/v1/jobs", json={"url": url}, headers=headers)
        assert created.status_code == 201, created.text
        for _ in range(300):
            job = (await client.get(f"/api/v1/jobs/{created.json()['id']}", headers=headers)).json()
            if job["status"] == "COMPLETED":
                break
            await asyncio.sleep(0.05)
        assert job["status"] == "COMPLETED", job
        assert job["scraped_title"] == "Page 7"
        metrics = (await client.get("/metrics")).text
    assert "taskcrawler_jobs_created_total 1.0" in metrics
    # The worker counts a job once its outcome is written, so just after the API shows it.
    async with httpx.AsyncClient() as client:
        for _ in range(100):
            worker_metrics = (await client.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
            if "taskcrawler_jobs_completed_total 1.0" in worker_metrics:
                break
            await asyncio.sleep(0.05)
    assert "taskcrawler_jobs_completed_total 1.0" in worker_metrics
    # JSON logs (the image's TASKCRAWLER_LOG_FORMAT), one object per line.
    for line in worker.output().splitlines():
        assert json.loads(line)["level"]
