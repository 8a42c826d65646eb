"""The body limit as a bare ASGI middleware: declared lengths, chunked bodies, lying headers."""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

from taskcrawler.api.limits import BodySizeLimit, _declared_length


def _scope(*headers: tuple[bytes, bytes]) -> Scope:
    return {"type": "http", "headers": list(headers)}


def test_the_declared_length_is_trusted_only_when_unambiguous() -> None:
    assert _declared_length(_scope((b"content-length", b"12"))) == 12
    assert _declared_length(_scope()) is None
    assert _declared_length(_scope((b"content-length", b"-1"))) is None
    assert _declared_length(_scope((b"content-length", b"1"), (b"content-length", b"2"))) is None
    chunked = (b"transfer-encoding", b"chunked")
    assert _declared_length(_scope((b"content-length", b"12"), chunked)) is None


async def _call(
    scope: Scope, body_chunks: list[bytes], max_bytes: int
) -> tuple[list[Message], int]:
    """Run the middleware over an app that reads the whole body; (messages sent, bytes read)."""
    pending = [
        {"type": "http.request", "body": chunk, "more_body": i < len(body_chunks) - 1}
        for i, chunk in enumerate(body_chunks)
    ]
    sent: list[Message] = []
    read = 0

    async def receive() -> Message:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal read
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            read += len(message["body"])
            if not message["more_body"]:
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    await BodySizeLimit(app, max_bytes=max_bytes)(scope, receive, send)
    return sent, read


async def test_a_declared_length_over_the_limit_is_refused_unread() -> None:
    sent, read = await _call(_scope((b"content-length", b"11")), [b"x" * 11], max_bytes=10)
    assert sent[0]["status"] == 413
    assert read == 0


async def test_a_declared_length_within_the_limit_reaches_the_app() -> None:
    sent, read = await _call(_scope((b"content-length", b"10")), [b"x" * 10], max_bytes=10)
    assert sent[0]["status"] == 200
    assert read == 10


async def test_a_chunked_body_is_counted_as_it_arrives() -> None:
    scope = _scope((b"transfer-encoding", b"chunked"), (b"content-length", b"5"))
    sent, _read = await _call(scope, [b"x" * 6] * 3, max_bytes=10)
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [413]


async def test_a_declared_length_of_thousands_of_digits_is_no_error() -> None:
    # httptools (uvicorn's parser when installed) frames "000…05" as 5 bytes; int() refuses
    # the 5,001 digits, which made every such request a 500.
    padded = (b"content-length", b"0" * 5000 + b"5")
    sent, read = await _call(_scope(padded), [b"x" * 5], max_bytes=10)
    assert (sent[0]["status"], read) == (200, 5)
    huge = (b"content-length", b"9" * 5000)
    sent, read = await _call(_scope(huge), [b"x" * 11], max_bytes=10)
    assert (sent[0]["status"], read) == (413, 0)
