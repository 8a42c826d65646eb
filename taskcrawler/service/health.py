"""Readiness: whether the database and the queue answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from taskcrawler.domain import ServiceUnavailable


class HealthService:
    def __init__(
        self, database: Callable[[], Awaitable[None]], queue: Callable[[], Awaitable[None]]
    ) -> None:
        self._pings = {"database": database, "queue": queue}

    async def checks(self) -> dict[str, str]:
        """Each dependency: ``ok``, or why it is unavailable."""
        checks: dict[str, str] = {}
        for name, ping in self._pings.items():
            try:
                await ping()
                checks[name] = "ok"
            except ServiceUnavailable as exc:
                checks[name] = f"unavailable: {exc}"
        return checks
