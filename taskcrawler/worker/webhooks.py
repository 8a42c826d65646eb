"""The webhook dispatcher, one in every worker: POST due deliveries, signed, behind the guard.

Safe with many workers: deliveries are claimed under a lease (see storage/webhooks.py). Delivery
is at least once: a worker that dies after the receiver got the POST but before the result was
recorded leaves the delivery due again when the lease ends, and it is sent again with the same
``X-TaskCrawler-Delivery`` id. Receivers deduplicate on that id.

Callback URLs were named by API users, so they pass the same address guard as fetches: the URL's
host is vetted, every resolved address is vetted (and is the address connected to), and the socket
factory refuses blocked destinations. Redirects are not followed: a 3xx is a failed attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError, InvalidURL, ServiceUnavailable
from taskcrawler.domain.storable import storable_text
from taskcrawler.domain.urls import request_target
from taskcrawler.domain.webhooks import (
    FIRECRAWL_STYLE,
    AttemptResult,
    ClaimedDelivery,
    DeliveryStatus,
    delivery_headers,
    encode_body,
    retry_delay,
)
from taskcrawler.fetch.fetcher import client_error
from taskcrawler.fetch.guard import AddressGuard
from taskcrawler.fetch.session import guarded_session
from taskcrawler.settings import Settings
from taskcrawler.storage.ports import WebhookRepository

log = logging.getLogger(__name__)

#: The receiver's answer is not read beyond this (only its status code matters).
MAX_RESPONSE_BYTES = 4096
#: The receiver's reason phrase is kept to this many characters in the attempt's error.
MAX_REASON_CHARS = 200
#: How long a claimed delivery is ours beyond its POST deadline before another worker may retry.
LEASE_MARGIN_SECONDS = 30.0


class WebhookDispatcher:
    """Claims due deliveries and POSTs them, up to ``settings.webhook_concurrency`` at once.

    ``guard`` defaults to the settings' policy for webhooks (on unless
    ``webhooks_reach_private_networks``); ``resolver`` is the DNS resolver the guard wraps.
    """

    def __init__(
        self,
        settings: Settings,
        store: WebhookRepository,
        *,
        guard: AddressGuard | None = None,
        resolver: AbstractResolver | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.guard = guard or AddressGuard(enabled=not settings.webhooks_reach_private_networks)
        self.rng = rng or random.Random()
        self.delivered = 0
        self.failed = 0
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None

    @property
    def lease_seconds(self) -> float:
        return self.settings.webhook_timeout_seconds + LEASE_MARGIN_SECONDS

    # --- lifecycle ------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Dispatch until ``stop`` is set; a full batch is followed at once by the next."""
        while not stop.is_set():
            try:
                claimed = await self.dispatch_due()
            except ServiceUnavailable as exc:
                log.warning("webhooks skipped, %s unavailable: %s", exc.dependency, exc)
                claimed = 0
            except Exception:
                # A bug must not end webhooks for the life of the worker; the leases recover.
                log.exception("webhook dispatch failed")
                claimed = 0
            if claimed >= self.settings.webhook_concurrency:
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.webhook_poll_seconds):
                    await stop.wait()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- one round ------------------------------------------------------------------------

    async def dispatch_due(self) -> int:
        """Claim the due deliveries (one batch), attempt each, record each. Returns how many."""
        claimed = await self.store.claim_due(
            limit=self.settings.webhook_concurrency,
            lease_seconds=self.lease_seconds,
            default_secret=self.settings.webhook_secret,
        )
        if claimed:
            await asyncio.gather(*(self._deliver_and_record(d) for d in claimed))
        return len(claimed)

    async def _deliver_and_record(self, delivery: ClaimedDelivery) -> None:
        result = await self.attempt(delivery)
        status, due = self._next_state(delivery, result)
        try:
            await self.store.finish_attempt(
                delivery,
                status=status,
                status_code=result.status_code,
                error=result.error,
                next_attempt_at=due,
            )
        except ServiceUnavailable as exc:
            # The lease ends and the delivery is attempted again: at least once.
            log.warning("could not record webhook %s: %s", delivery.id, exc)

    def _next_state(
        self, delivery: ClaimedDelivery, result: AttemptResult
    ) -> tuple[DeliveryStatus, datetime | None]:
        if result.delivered:
            self.delivered += 1
            return DeliveryStatus.DELIVERED, None
        if not result.sent:
            self.failed += 1
            log.warning("webhook %s to %s not sent: %s", delivery.id, delivery.url, result.error)
            return DeliveryStatus.BLOCKED, None
        if result.retryable and delivery.attempts < self.settings.webhook_max_attempts:
            delay = retry_delay(
                delivery.attempts,
                base=self.settings.webhook_retry_base_seconds,
                cap=self.settings.webhook_retry_max_seconds,
                rng=self.rng,
            )
            return DeliveryStatus.PENDING, datetime.now(UTC) + timedelta(seconds=delay)
        self.failed += 1
        log.warning(
            "webhook %s to %s failed after %d attempts: %s",
            delivery.id,
            delivery.url,
            delivery.attempts,
            result.error or result.status_code,
        )
        return DeliveryStatus.FAILED, None

    async def attempt(self, delivery: ClaimedDelivery) -> AttemptResult:
        """One POST. Never raises for the receiver's failures: they are the result."""
        body = encode_body(delivery.payload)
        headers = delivery_headers(
            delivery_id=delivery.id,
            event=delivery.event,
            body=body,
            secret=delivery.secret,
            timestamp=int(time.time()),
            firecrawl=delivery.style == FIRECRAWL_STYLE,
            extra=delivery.headers,
        )
        try:
            target = _callback_target(delivery.url)
            self.guard.check_host(target.raw_host)
            async with asyncio.timeout(self.settings.webhook_timeout_seconds):
                async with self._session_or_new().post(
                    target, data=body, headers=headers, allow_redirects=False
                ) as resp:
                    await resp.content.read(MAX_RESPONSE_BYTES)
                    status = resp.status
                    # The receiver's words, stored as the attempt's error: a NUL or bytes that
                    # are not UTF-8 would make the attempt unrecordable (and sent again).
                    reason = storable_text(resp.reason or "", MAX_REASON_CHARS)
        except FetchError as exc:
            return _error_result(exc)
        except TimeoutError:
            timeout = self.settings.webhook_timeout_seconds
            return AttemptResult(error=f"{ErrorCode.TIMEOUT}: no answer within {timeout:g} s")
        except aiohttp.ClientError as exc:
            return _error_result(client_error(exc))
        except Exception:
            log.exception("unexpected error delivering webhook %s", delivery.id)
            # A delivery's error is shown to its key (the API, the dashboard): no internals.
            return AttemptResult(
                error="internal_error: an unexpected error delivering it (the worker's log has it)"
            )
        if 200 <= status < 300:
            return AttemptResult(status_code=status)
        return AttemptResult(status_code=status, error=f"http_{status}: {reason}".rstrip(": "))

    # --- session --------------------------------------------------------------------------

    def _session_or_new(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = guarded_session(
                self.guard,
                limit=self.settings.webhook_concurrency,
                connect_timeout=self.settings.connect_timeout_seconds,
                headers={"User-Agent": self.settings.user_agent},
                resolver=self._resolver,
                # Each delivery resolves afresh: a receiver's address may move between retries.
                use_dns_cache=False,
            )
        return self._session


def _callback_target(url: str) -> URL:
    try:
        return request_target(url)
    except InvalidURL as exc:
        raise FetchError(ErrorCode.INVALID_URL, f"the callback URL cannot be used: {exc}") from None


#: Refusals made here, before any connection: the POST was never sent.
_REFUSED_BEFORE_SENDING = frozenset({ErrorCode.BLOCKED_ADDRESS, ErrorCode.INVALID_URL})


#: How to let webhooks reach a callback on a private address (the fetch's own fix names the
#: fetch's setting).
_BLOCKED_CALLBACK_FIX = (
    "Fix: to deliver to loopback and private addresses, set "
    "TASKCRAWLER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true where the workers run (it is off so that a "
    "callback URL cannot reach the services on their network)."
)


def _error_result(exc: FetchError) -> AttemptResult:
    refused = exc.code in _REFUSED_BEFORE_SENDING
    error = f"{exc.code}: {exc.message}"
    if exc.code == ErrorCode.BLOCKED_ADDRESS:
        error = f"{error}. {_BLOCKED_CALLBACK_FIX}"
    return AttemptResult(
        status_code=exc.http_status,
        error=error,
        # A blocked address or a malformed URL stays so: no point retrying.
        retryable=not refused,
        sent=not refused,
    )


@contextlib.asynccontextmanager
async def running_beside(
    dispatcher: WebhookDispatcher, stop: asyncio.Event, grace_seconds: float
) -> AsyncIterator[WebhookDispatcher]:
    """Run ``dispatcher`` beside the body of the ``async with`` (a worker), until it exits;
    POSTs in flight then get ``grace_seconds`` (their timeout) to finish."""
    done = asyncio.Event()

    async def watch_stop() -> None:
        await stop.wait()
        done.set()

    watcher = asyncio.create_task(watch_stop(), name="webhooks-stop")
    task = asyncio.create_task(dispatcher.run(done), name="webhooks")
    try:
        yield dispatcher
    finally:
        done.set()
        watcher.cancel()
        try:
            # An unrecorded POST is sent again later: at least once.
            await asyncio.wait_for(task, timeout=grace_seconds + 1)
        except TimeoutError:
            pass
        except Exception:
            log.exception("webhook dispatcher crashed")
        await asyncio.gather(watcher, return_exceptions=True)
        await dispatcher.close()
