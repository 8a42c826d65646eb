"""Operator commands as a user runs them: keys, migrate, reextract, and the open-bind guard.

The short commands run in the test's process (tests/support/cli.py); the servers, in processes of
their own.
"""

import json
import re
from pathlib import Path

from taskcrawler.storage import KeyStore
from taskcrawler.storage.adapters import open_database
from tests.support.cli import Result, run_cli
from tests.support.processes import ProcessManager, free_port
from tests.support.target import TargetServer


async def _run(cwd: Path, args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """The command's exit code, and what it wrote: standard error, then standard output."""
    result = await _result(cwd, args, env)
    return result.code, result.err + result.out


async def _result(cwd: Path, args: list[str], env: dict[str, str]) -> Result:
    return await run_cli(*args, cwd=cwd, env=env)


async def test_keys_create_list_revoke(tmp_path: Path) -> None:
    env = {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/k.db"}
    assert (await _run(tmp_path, ["migrate"], env))[0] == 0
    created = await _result(tmp_path, ["keys", "create", "--name", "ops", "--admin"], env)
    code, out = created.code, created.err + created.out
    assert code == 0
    token = next(line for line in out.splitlines() if line.startswith("tc_"))
    assert created.out == token + "\n"  # alone on stdout: KEY=$(taskcrawler keys create ...)
    key_id = token.split("_")[1]
    code, out = await _run(tmp_path, ["keys", "list"], env)
    assert code == 0
    assert f"{key_id}\tadmin" in out
    assert token not in out  # never shown again
    assert (await _run(tmp_path, ["keys", "revoke", key_id], env))[0] == 0
    code, out = await _run(tmp_path, ["keys", "list"], env)
    assert f"{key_id}\trevoked" in out
    assert (await _run(tmp_path, ["keys", "revoke", key_id], env))[0] == 1


async def test_keys_show_their_webhook_secret_once_and_rotate_it(tmp_path: Path) -> None:
    env = {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/w.db"}
    assert (await _run(tmp_path, ["migrate"], env))[0] == 0
    code, out = await _run(tmp_path, ["keys", "create", "--name", "hooks"], env)
    assert code == 0
    token = next(line for line in out.splitlines() if line.startswith("tc_"))
    [shown] = re.findall(r"webhook secret \(verifies this key's webhook signatures\): (\w+)", out)
    code, out = await _run(tmp_path, ["keys", "create", "--name", "script", "--json"], env)
    assert code == 0
    created = json.loads(out)
    assert set(created) == {"id", "key", "webhook_secret"}
    key_id = token.split("_")[1]
    code, out = await _run(tmp_path, ["keys", "rotate-secret", key_id], env)
    assert code == 0
    rotated = out.strip().splitlines()[-1]

    db = open_database(env["TASKCRAWLER_DATABASE_URL"])
    try:
        stored = {key.id: key.webhook_secret for key in await KeyStore(db).list_keys()}
    finally:
        await db.close()
    assert stored[created["id"]] == created["webhook_secret"]
    assert len(shown) == len(rotated) == 64 and rotated != shown
    assert stored[key_id] == rotated
    code, out = await _run(tmp_path, ["keys", "list"], env)
    assert rotated not in out and created["webhook_secret"] not in out
    code, out = await _run(tmp_path, ["keys", "rotate-secret", "0123456789abcdef"], env)
    assert code == 1 and "no active key 0123456789abcdef" in out


async def test_the_cli_refuses_what_the_api_refuses_before_touching_the_database(
    tmp_path: Path,
) -> None:
    env = {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/v.db"}
    assert (await _run(tmp_path, ["migrate"], env))[0] == 0
    # SQLite would store these; PostgreSQL would fail on them: refused for both, as the API does.
    for args, says in [
        (["keys", "create", "--name", "n" * 201], "--name: String should have at most 200"),
        (["keys", "create", "--name", "x", "--requests-per-minute", str(2**31)], "less than"),
        (["keys", "revoke", "not an id"], "not a key id"),
        (["keys", "rotate-secret", "not an id"], "not a key id"),
        (["scrape", "http://\u2488.example/"], "has an empty label"),
    ]:
        code, out = await _run(tmp_path, args, env)
        assert code == 2, out
        assert says in out, out
    code, out = await _run(tmp_path, ["keys", "list"], env)
    assert code == 0 and out.strip() == ""


async def test_open_bind_without_auth_is_refused(tmp_path: Path) -> None:
    env = {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/b.db"}
    for command in ("serve", "api"):
        code, out = await _run(tmp_path, [command, "--host", "0.0.0.0"], env)
        assert code == 2, out
        assert "refusing to serve on 0.0.0.0 without authentication" in out


async def test_open_bind_with_auth_or_insecure_starts(
    processes: ProcessManager, tmp_path: Path
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path}/c.db"
    port = free_port()
    server = processes.start(
        ["serve", "--host", "0.0.0.0", "--port", str(port)],
        {"TASKCRAWLER_DATABASE_URL": db, "TASKCRAWLER_AUTH_REQUIRED": "true"},
    )
    await server.wait_for_http(f"http://127.0.0.1:{port}/healthz")
    port = free_port()
    insecure = processes.start(
        ["api", "--host", "0.0.0.0", "--port", str(port), "--insecure"],
        {"TASKCRAWLER_DATABASE_URL": db},
    )
    await insecure.wait_for_http(f"http://127.0.0.1:{port}/healthz")


async def test_reextract_command_on_an_empty_database(tmp_path: Path) -> None:
    env = {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/r.db"}
    assert (await _run(tmp_path, ["migrate"], env))[0] == 0
    code, out = await _run(tmp_path, ["reextract"], env)
    assert code == 0
    assert "re-extracted 0 archived pages" in out


async def test_scrape_prints_the_markdown_and_a_refusal_names_its_fix(
    target: TargetServer, tmp_path: Path
) -> None:
    url = target.url("/page/7")
    allowed = {"TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TASKCRAWLER_RESPECT_ROBOTS": "false"}
    code, out = await _run(tmp_path, ["scrape", url], allowed)
    assert code == 0, out
    assert '"markdown": "# Page 7' in out and "This is page 7 of the test target." in out
    assert '"text":' not in out
    code, out = await _run(tmp_path, ["scrape", url, "--format", "text"], allowed)
    assert code == 0 and '"text": "Page 7' in out and '"markdown":' not in out, out
    code, out = await _run(tmp_path, ["scrape", url], {})
    assert code == 1 and '"error_code": "blocked_address"' in out, out
    assert "set TASKCRAWLER_ALLOW_PRIVATE_NETWORKS=true" in out
