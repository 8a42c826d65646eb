"""Readiness: whether the database and the queue answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from taskcrawler.domain import ServiceUnavailable


class HealthService:
    def __init__(
        self,
        database: Callable[[], Awaitable[None]],
        queue: Callable[[], Awaitable[None]],
        *,
        vectors: Callable[[], Awaitable[str]] | None = None,
    ) -> None:
        self._pings = {"database": database, "queue": queue}
        self._vectors = vectors

    #: The checks readiness depends on; the others say what works, not whether to send traffic.
    required = frozenset({"database", "queue"})

    async def checks(self) -> dict[str, str]:
        """Each dependency: ``ok``, or why it is unavailable."""
        checks: dict[str, str] = {}
        for name, ping in self._pings.items():
            try:
                await ping()
                checks[name] = "ok"
            except ServiceUnavailable as exc:
                checks[name] = f"unavailable: {exc}"
        if self._vectors is not None and checks["database"] == "ok":
            try:
                checks["vectors"] = await self._vectors()
            except ServiceUnavailable as exc:
                checks["vectors"] = f"unavailable: {exc}"
        return checks

    def ready(self, checks: dict[str, str]) -> bool:
        return all(checks.get(name) == "ok" for name in self.required)
