"""``taskcrawler mcp`` fed lines that are no message: each is answered (a client waits for an
answer to every line it sends), and the next line is served.

No API runs: initialize and ping are answered by the server itself."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import orjson

from tests.support.processes import clean_env, free_port

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}

PING_WITH = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":'
HOSTILE_LINES = {
    "not JSON": b"not json",
    "a lone surrogate, escaped": PING_WITH + b'"\\ud800"}}',
    "a lone surrogate, as bytes": PING_WITH + b'"\xed\xa0\x80"}}',
    "not UTF-8": PING_WITH + b'"\xff"}}',
    "100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "cut short": b'{"jsonrpc":"2.0","id":5,"method":"pi',
}


async def answer(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    assert line, "the server ended"
    found: dict[str, Any] = orjson.loads(line)
    return found


async def test_every_unreadable_line_is_answered_and_the_next_is_served() -> None:
    # Imported here: the module imports the MCP SDK (~0.7 s of CPU), and every test process
    # imports this file to collect it; the server under test is a process of its own.
    from taskcrawler.mcp_server.stdio import MAX_LINE_BYTES

    command = [
        sys.executable,
        "-m",
        "taskcrawler",
        "mcp",
        "--api",
        f"http://127.0.0.1:{free_port()}",
    ]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=2**20,
        env=clean_env(),
    )
    assert process.stdin is not None

    async def send(line: bytes) -> None:
        assert process.stdin is not None
        process.stdin.write(line + b"\n")
        await process.stdin.drain()

    try:
        await send(orjson.dumps(INITIALIZE))
        assert (await answer(process))["id"] == 1
        await send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for n, (name, line) in enumerate(HOSTILE_LINES.items()):
            await send(line)
            assert await answer(process) == PARSE_ERROR, name
            await send(b"")  # a blank line is no message, and nobody waits for its answer
            await send(orjson.dumps({"jsonrpc": "2.0", "id": 100 + n, "method": "ping"}))
            assert await answer(process) == {"jsonrpc": "2.0", "id": 100 + n, "result": {}}, name

        await send(b'{"id": 7, "result": "no jsonrpc member"}')
        invalid = await answer(process)
        assert invalid["id"] is None and invalid["error"]["code"] == -32600

        await send(b'"' + b"x" * (MAX_LINE_BYTES + 10) + b'"')
        too_long = await answer(process)
        assert too_long["id"] is None and too_long["error"]["code"] == -32700
        assert str(MAX_LINE_BYTES) in too_long["error"]["message"]
        await send(orjson.dumps({"jsonrpc": "2.0", "id": 200, "method": "ping"}))
        assert await answer(process) == {"jsonrpc": "2.0", "id": 200, "result": {}}
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 30)
    assert process.returncode == 0
