from __future__ import annotations

import sqlalchemy as sa

from taskcrawler.common.errors import translate_errors
from taskcrawler.domain import StorageUnavailable


def _storage_error(exc: Exception) -> Exception | None:
    """ "The database cannot be reached" as :class:`StorageUnavailable`; other errors unchanged."""
    if isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError):
        return StorageUnavailable(str(exc.orig or exc))
    if isinstance(exc, sa.exc.DBAPIError):
        return StorageUnavailable(str(exc.orig or exc)) if exc.connection_invalidated else None
    if isinstance(exc, OSError | TimeoutError):
        return StorageUnavailable(f"{type(exc).__name__}: {exc}")
    return None


#: Decorator for every storage coroutine: callers see one exception type for "database down".
unavailable_on_connection_errors = translate_errors(_storage_error)
