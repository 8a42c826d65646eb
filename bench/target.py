"""The benchmark's target site: ``python -m bench.target --port P``.

Serves ``/p/<n>`` for any ``n``: a distinct HTML page of 5-20 KB with a title, meta tags,
OpenGraph, headings, paragraphs and links, built from a few pre-rendered variants with ``n``
spliced in (so serving costs almost nothing and the site does not compete with what is measured
for the two cores). ``/robots.txt`` allows everything. A bare asyncio protocol on uvloop, HTTP/1.1
keep-alive; loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
from typing import Any, Final

VARIANTS: Final = 64
WORDS: Final = [
    "crawler",
    "queue",
    "lease",
    "worker",
    "fetch",
    "extract",
    "page",
    "title",
    "meta",
    "link",
    "index",
    "archive",
    "result",
    "latency",
    "throughput",
    "batch",
    "commit",
    "schema",
    "redis",
    "postgres",
    "sqlite",
    "python",
    "async",
    "event",
    "loop",
    "socket",
    "header",
    "body",
    "token",
    "policy",
    "robots",
    "politeness",
    "host",
    "budget",
    "retry",
    "backoff",
    "jitter",
]


def _paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def render_variant(variant: int) -> tuple[bytes, bytes, bytes]:
    """Three byte strings; a page is ``a + n + b + n + c`` (its number appears twice)."""
    rng = random.Random(variant)
    size_paragraphs = 8 + variant % 40  # ~5-20 KB overall
    topic = " ".join(rng.choice(WORDS) for _ in range(3)).title()
    links = "\n".join(
        f'<li><a href="/p/{rng.randrange(1_000_000)}">{rng.choice(WORDS)} {i}</a></li>'
        for i in range(20 + variant % 20)
    )
    paragraphs = "\n".join(
        f"<h2>{rng.choice(WORDS).title()} {i}</h2>\n<p>{_paragraph(rng, 40 + rng.randrange(30))}"
        "</p>"
        for i in range(size_paragraphs)
    )
    head_a = (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{topic} — page '
    )
    head_b = (
        "</title>\n"
        f'<meta name="description" content="{_paragraph(rng, 18)}">\n'
        f'<meta name="keywords" content="{", ".join(rng.sample(WORDS, 6))}">\n'
        '<meta name="author" content="Bench Writer">\n'
        f'<meta property="og:title" content="{topic}">\n'
        '<meta property="og:type" content="article">\n'
        '<meta property="og:image" content="/static/cover.png">\n'
        '<link rel="canonical" href="/p/'
    )
    body = (
        '">\n<link rel="stylesheet" href="/static/site.css">\n</head>\n<body>\n'
        f"<header><nav><ul>{links}</ul></nav></header>\n"
        f"<main><article><h1>{topic}</h1>\n{paragraphs}\n</article></main>\n"
        "<footer><p>© Bench site</p></footer>\n</body>\n</html>\n"
    )
    return head_a.encode(), head_b.encode(), body.encode()


PAGES: Final = [render_variant(v) for v in range(VARIANTS)]
ROBOTS: Final = b"User-agent: *\nAllow: /\n"


def page(n: int) -> bytes:
    a, b, c = PAGES[n % VARIANTS]
    num = str(n).encode()
    return a + num + b + num + c


def _response(status: bytes, body: bytes, content_type: bytes) -> bytes:
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: "
        + content_type
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\nConnection: keep-alive\r\n\r\n"
        + body
    )


NOT_FOUND: Final = _response(b"404 Not Found", b"not found", b"text/plain")
ROBOTS_RESPONSE: Final = _response(b"200 OK", ROBOTS, b"text/plain")


class PageProtocol(asyncio.Protocol):
    """GET only, no request bodies (what crawlers send); pipelined requests answered in order.
    ``/s/<n>`` is page ``n`` sent after ``slow_seconds`` (a slow site)."""

    slow_seconds = 0.0

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: Any = None
        self.pending = 0  # slow answers not yet sent: later ones wait behind them

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # uvloop's transports are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > 65536:
                    self.transport.close()
                return
            request, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            if request.startswith(b"GET /s/") or self.pending:
                self._later(request)
            else:
                self.transport.write(self._answer(request))

    def _later(self, request: bytes) -> None:
        """Answered after the delay, in order: a keep-alive client sends one at a time."""
        self.pending += 1
        slow = request.startswith(b"GET /s/")
        request = request.replace(b"GET /s/", b"GET /p/", 1)

        def send() -> None:
            self.pending -= 1
            if not self.transport.is_closing():
                self.transport.write(self._answer(request))

        asyncio.get_running_loop().call_later(self.slow_seconds if slow else 0.0, send)

    @staticmethod
    def _answer(request: bytes) -> bytes:
        line = request.split(b"\r\n", 1)[0]
        parts = line.split(b" ")
        path = parts[1] if len(parts) >= 2 else b"/"
        if path.startswith(b"/p/"):
            try:
                n = int(path[3:].split(b"?", 1)[0])
            except ValueError:
                return NOT_FOUND
            return _response(b"200 OK", page(n), b"text/html; charset=utf-8")
        if path == b"/robots.txt":
            return ROBOTS_RESPONSE
        return NOT_FOUND


async def serve(port: int, hosts: int = 1) -> None:
    """On ``hosts`` loopback addresses (127.0.0.1, .2, …): hosts of their own to politeness."""
    loop = asyncio.get_running_loop()
    addresses = [f"127.0.0.{n}" for n in range(1, hosts + 1)]
    server = await loop.create_server(PageProtocol, addresses, port, backlog=4096)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"target listening on {', '.join(addresses)} port {port}", flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--hosts", type=int, default=1, help="loopback addresses, 1-250")
    parser.add_argument("--slow", type=float, default=0.5, help="seconds before /s/<n> answers")
    args = parser.parse_args()
    if not 1 <= args.hosts <= 250:
        parser.error("--hosts must be 1-250")
    PageProtocol.slow_seconds = args.slow
    try:
        import uvloop

        uvloop.run(serve(args.port, args.hosts))
    except ImportError:
        asyncio.run(serve(args.port, args.hosts))


if __name__ == "__main__":
    main()
