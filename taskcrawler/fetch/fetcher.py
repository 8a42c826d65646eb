from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.settings import Settings

ALLOWED_CONTENT_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml"}
)


@dataclass(frozen=True, slots=True)
class FetchedPage:
    url: str
    final_url: str
    status: int
    headers: dict[str, str]
    content_type: str | None
    charset: str | None
    body: bytes


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class Fetcher:
    """Fetches one URL at a time with a shared session; raises :class:`FetchError` on failure."""

    def __init__(self, settings: Settings, *, session: aiohttp.ClientSession | None = None) -> None:
        self.settings = settings
        self._session = session
        self._owns_session = session is None

    def _session_or_new(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self.settings.worker_concurrency, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": self.settings.user_agent},
                timeout=aiohttp.ClientTimeout(
                    total=self.settings.fetch_timeout_seconds,
                    sock_connect=self.settings.connect_timeout_seconds,
                ),
            )
        return self._session

    async def close(self) -> None:
        if self._owns_session and self._session is not None:
            await self._session.close()

    async def fetch(self, url: str) -> FetchedPage:
        session = self._session_or_new()
        try:
            async with asyncio.timeout(self.settings.fetch_timeout_seconds):
                async with session.get(url, max_redirects=self.settings.max_redirects) as resp:
                    if resp.status >= 400:
                        raise FetchError.for_status(
                            resp.status, resp.reason or "", _retry_after(resp.headers.get("Retry-After"))
                        )
                    body = await resp.content.read(self.settings.max_body_bytes + 1)
                    if len(body) > self.settings.max_body_bytes:
                        raise FetchError(ErrorCode.TOO_LARGE, "the body is over the size limit")
                    return FetchedPage(
                        url=url,
                        final_url=str(resp.url),
                        status=resp.status,
                        headers={k.lower(): v for k, v in resp.headers.items()},
                        content_type=resp.content_type,
                        charset=resp.charset,
                        body=body,
                    )
        except FetchError:
            raise
        except TimeoutError:
            raise FetchError(ErrorCode.TIMEOUT, "the fetch did not finish in time") from None
        except aiohttp.TooManyRedirects:
            raise FetchError(ErrorCode.TOO_MANY_REDIRECTS, "too many redirects") from None
        except aiohttp.ClientConnectorDNSError as exc:
            raise FetchError(ErrorCode.DNS, str(exc)) from None
        except aiohttp.ClientConnectorError as exc:
            raise FetchError(ErrorCode.CONNECT, str(exc)) from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            raise FetchError(ErrorCode.CONNECTION_CLOSED, str(exc) or type(exc).__name__) from None
        except aiohttp.ClientError as exc:
            raise FetchError(ErrorCode.CONNECT, f"{type(exc).__name__}: {exc}") from None
