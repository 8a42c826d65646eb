from __future__ import annotations

import asyncpg
import sqlalchemy as sa

from taskcrawler.common.errors import translate_errors
from taskcrawler.domain import StorageUnavailable

#: SQLSTATEs (or their class) of a PostgreSQL that is going away or not back yet: 08 connection
#: exceptions, 57P01-57P03 shutting down or "the database system is starting up", 53300 too many
#: connections. asyncpg raises them as plain errors, not as lost connections; seen right after a
#: restart, they must make callers back off like a refused connection does, not crash them.
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03", "53300")


def _in_unavailable_state(error: object) -> bool:
    return (getattr(error, "sqlstate", None) or "").startswith(_UNAVAILABLE_STATES)


def _storage_error(exc: Exception) -> Exception | None:
    """ "The database cannot be reached" as :class:`StorageUnavailable`; other errors unchanged."""
    if isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError):
        return StorageUnavailable(str(exc.orig or exc))
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated or _in_unavailable_state(exc.orig):
            return StorageUnavailable(str(exc.orig or exc))
        return None
    if isinstance(exc, asyncpg.PostgresError):  # from the driver itself: a pinned connection
        return StorageUnavailable(str(exc)) if _in_unavailable_state(exc) else None
    if isinstance(exc, OSError | TimeoutError):
        return StorageUnavailable(f"{type(exc).__name__}: {exc}")
    return None


#: Decorator for every storage coroutine: callers see one exception type for "database down".
unavailable_on_connection_errors = translate_errors(_storage_error)
