"""``taskcrawler mcp``: the tools over standard input and output, for an agent that starts the
server itself (Claude Desktop, Cursor, an Agents SDK), talking to a running TaskCrawler API.

Every line of standard input is an answer's promise: a client waits for the answer to each
request it sends. The SDK's transport passes a line it cannot read to the server as an
exception, which answers nothing, so here each line is checked before the SDK sees it: one
that is not JSON (not UTF-8, a lone surrogate, nesting past the parser's limit) is answered
with JSON-RPC's parse error (``-32700``, ``id`` null), JSON that is no JSON-RPC message with
an invalid request (``-32600``), and a line over :data:`MAX_LINE_BYTES` is skipped to its end
and answered as unparsable. The next line is served either way.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from taskcrawler.client import AsyncTaskCrawler
from taskcrawler.mcp_server.tools import build_server

#: The longest line read as a message; the API refuses bigger requests anyway.
MAX_LINE_BYTES = 4 * 1024 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def refusal(line: bytes) -> types.JSONRPCError | None:
    """None for a line that is a JSON-RPC message, else the error it is answered with."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        if any(error["type"] == "json_invalid" for error in exc.errors()):
            return error_answer(PARSE_ERROR, "Parse error")
        return error_answer(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
    return None


def error_answer(code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
    )


class CheckedLines:
    """Standard input's lines as the SDK's transport iterates them, each one a JSON-RPC
    message: the others are answered on :attr:`answers` (set once the transport is up) and
    not passed on."""

    def __init__(self, source: IO[bytes], max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.source = source
        self.max_line_bytes = max_line_bytes
        self.answers: Any = None  # the transport's write stream, a clone of it of our own
        self._ready = anyio.Event()

    def answer_on(self, write_stream: Any) -> None:
        self.answers = write_stream.clone()
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        await self._ready.wait()
        async with self.answers:
            while (read := await anyio.to_thread.run_sync(self._read_line)) is not None:
                line, whole = read
                if not line.strip():
                    continue  # nobody waits for an answer to a blank line
                answer = refusal(line) if whole else self._too_long()
                if answer is None:
                    yield line.decode()  # valid JSON is valid UTF-8
                else:
                    await self.answers.send(SessionMessage(answer))

    def _too_long(self) -> types.JSONRPCError:
        return error_answer(
            PARSE_ERROR, f"Parse error: a message is over {self.max_line_bytes} bytes"
        )

    def _read_line(self) -> tuple[bytes, bool] | None:
        """The next line and whether it is whole: one over the bound is read to its end and
        dropped, and only its first part is returned. None at the end of input."""
        line = self.source.readline(self.max_line_bytes + 1)
        if not line:
            return None
        if len(line) <= self.max_line_bytes or line.endswith(b"\n"):
            return line, True
        while (rest := self.source.readline(self.max_line_bytes)) and not rest.endswith(b"\n"):
            pass
        return line[:64], False


async def serve_stdio(
    base_url: str,
    api_key: str | None,
    *,
    request_timeout: float = 120.0,
    source: IO[bytes] | None = None,
) -> None:
    """Serve until the client closes standard input (or ``source`` ends)."""
    lines = CheckedLines(source if source is not None else sys.stdin.buffer)
    async with AsyncTaskCrawler(base_url, api_key, timeout=request_timeout) as tc:

        @asynccontextmanager
        async def client_for(
            ctx: ServerRequestContext[Any, Any],
        ) -> AsyncIterator[AsyncTaskCrawler]:
            yield tc

        server = build_server(client_for)
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
            lines.answer_on(write)
            await server.run(read, write, server.create_initialization_options())
