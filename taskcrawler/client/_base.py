"""What the sync and async clients share: configuration, headers, and reading an answer."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
import orjson
from pydantic import ValidationError

from taskcrawler import __version__
from taskcrawler.client._calls import Call
from taskcrawler.client._errors import TaskCrawlerError, refused, retry_after_of

T = TypeVar("T")

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0


def headers(api_key: str | None, user_agent: str | None) -> dict[str, str]:
    found = {"Accept": "application/json", "User-Agent": user_agent or f"taskcrawler/{__version__}"}
    if api_key:
        found["Authorization"] = f"Bearer {api_key}"
    return found


def timeout(seconds: float | None) -> httpx.Timeout:
    return httpx.Timeout(seconds)


def request_kwargs(call: Call[Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"params": tuple(call.params) or None}
    if call.json is not None:
        kwargs["content"] = orjson.dumps(call.json)
        kwargs["headers"] = {"Content-Type": "application/json"}
    return kwargs


def unreachable(base_url: str, exc: Exception, timeout: float | None) -> TaskCrawlerError:
    """No answer: the message says where, and what to check."""
    if isinstance(exc, httpx.TimeoutException):
        return TaskCrawlerError(f"the API at {base_url} did not answer within {timeout:g} s")
    if isinstance(exc, httpx.ConnectError):
        cause = exc.__context__ or exc.__cause__ or exc
        reason = getattr(cause, "strerror", None) or str(exc) or type(exc).__name__
        return TaskCrawlerError(
            f"cannot connect to the API at {base_url} ({reason}); "
            "is `taskcrawler serve` running there? (--api sets the address)"
        )
    return TaskCrawlerError(f"talking to the API at {base_url} failed: {exc}")


def read(call: Call[T], response: httpx.Response) -> T:
    """The call's answer, or the :class:`TaskCrawlerError` the response is."""
    check(response, response.content)
    if call.raw:
        return call.read(response.status_code, response.content)
    if call.text:
        return call.read(response.status_code, response.text)
    try:
        body = orjson.loads(response.content) if response.content else None
    except orjson.JSONDecodeError:
        raise not_json(response) from None
    try:
        return call.read(response.status_code, body)
    except ValidationError:
        raise unexpected(response) from None


def check(response: httpx.Response, content: bytes) -> None:
    """Raise for an answer >= 400, whatever its body."""
    if response.status_code < 400:
        return
    try:
        body = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        body = None
    retry_after = retry_after_of(response.headers.get("Retry-After"))
    raise refused(response.status_code, body, retry_after, str(response.url))


def unexpected(response: httpx.Response) -> TaskCrawlerError:
    """JSON, but not the answer this call has: another service, or a proxy's own answer."""
    return TaskCrawlerError(
        f"{response.url} answered {response.status_code} with JSON that is not this call's "
        "answer: is --api the address of a TaskCrawler API of this version?",
        status=response.status_code,
    )


def not_json(response: httpx.Response) -> TaskCrawlerError:
    kind = response.headers.get("Content-Type", "").split(";")[0] or "no content type"
    return TaskCrawlerError(
        f"{response.url} answered {response.status_code} with {kind}, not JSON: "
        "is --api the address of a TaskCrawler API?",
        status=response.status_code,
    )
