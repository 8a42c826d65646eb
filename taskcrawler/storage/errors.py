from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import Callable, Coroutine, Iterator
from functools import wraps
from typing import Any, ParamSpec, TypeVar

import orjson
import sqlalchemy as sa

from taskcrawler.common.errors import translate_errors
from taskcrawler.domain import StorageUnavailable, UnstorableData
from taskcrawler.domain.storable import storable_text

#: SQLSTATEs (or their class) of a PostgreSQL that is going away or not back yet: 08 connection
#: exceptions, 57P01-57P03 shutting down or "the database system is starting up", 53300 too many
#: connections. asyncpg raises them as plain errors, not as lost connections; seen right after a
#: restart, they must make callers back off like a refused connection does, not crash them.
#: And 40001/40P01, a transaction rolled back as a serialization failure or to break a
#: deadlock: nothing of it was written, and the same writes succeed when tried again.
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03", "53300", "40001", "40P01")


def _in_unavailable_state(error: object) -> bool:
    return (getattr(error, "sqlstate", None) or "").startswith(_UNAVAILABLE_STATES)


def _asyncpg_error(error: object, name: str, module: str = "asyncpg") -> bool:
    """Whether ``error`` is asyncpg's ``module.name``. Only a process that loaded asyncpg (to
    reach PostgreSQL) can hold one, so it is not imported here: embedded mode never needs it,
    and importing it costs each process start about a tenth of a second of CPU."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(error, getattr(loaded, name))


def _storage_error(exc: Exception) -> Exception | None:
    """ "The database cannot be reached" as :class:`StorageUnavailable`; other errors unchanged."""
    if isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError):
        return StorageUnavailable(str(exc.orig or exc))
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated or _in_unavailable_state(exc.orig):
            return StorageUnavailable(str(exc.orig or exc))
        return None
    if _asyncpg_error(exc, "PostgresError"):  # from the driver itself: a pinned connection
        return StorageUnavailable(str(exc)) if _in_unavailable_state(exc) else None
    if isinstance(exc, OSError | TimeoutError):
        return StorageUnavailable(f"{type(exc).__name__}: {exc}")
    return None


#: Decorator for every storage coroutine: callers see one exception type for "database down".
unavailable_on_connection_errors = translate_errors(_storage_error)

P = ParamSpec("P")
R = TypeVar("R")

#: 40001 serialization failure, 40P01 deadlock detected: PostgreSQL rolled the whole
#: transaction back, so running it again from the start is what it asks of the client.
_ROLLED_BACK_STATES = ("40001", "40P01")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what it wraps: SQLAlchemy's ``orig`` (the driver's error), else its
    ``__cause__`` (a translated one), each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__


def _rolled_back(exc: BaseException) -> bool:
    return any(
        (getattr(error, "sqlstate", None) or "") in _ROLLED_BACK_STATES for error in _chain(exc)
    )


def retried_when_rolled_back(
    attempts: int = 3,
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Run a one-transaction write again when PostgreSQL rolled it back to break a deadlock
    with another writer (a worker finishing one of its jobs, the scheduler firing it).

    Only for coroutines whose writes are all in one transaction: a rolled-back attempt left
    nothing behind, so the next starts from what is committed. The last failure goes through.
    """

    def decorate(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        @wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            for attempt in range(1, attempts):
                try:
                    return await fn(*args, **kwargs)
                except Exception as exc:
                    if not _rolled_back(exc):
                        raise
                # Jittered, so the two writers do not meet again in the same order.
                await asyncio.sleep(random.uniform(0.005, 0.05) * attempt)
            return await fn(*args, **kwargs)  # the last try: its failure goes through

        return wrapper

    return decorate


#: SQLSTATE classes of a value the database refuses: 22 data exception (a NUL in text, the
#: escape \u0000 in JSONB, a value too long), 54 program limit exceeded (a JSONB string too long).
_DATA_STATES = ("22", "54")


def _refused_data(exc: BaseException) -> BaseException | None:
    """The error in ``exc``'s chain that says a value was refused, if any: by PostgreSQL, or
    before it was sent (a string no driver can encode, JSON orjson cannot write)."""
    for error in _chain(exc):
        if isinstance(error, UnicodeEncodeError | orjson.JSONEncodeError) or _asyncpg_error(
            error, "DataError", "asyncpg.exceptions._base"
        ):
            return error
        if (getattr(error, "sqlstate", None) or "").startswith(_DATA_STATES):
            return error
    return None


def _write_error(exc: Exception) -> Exception | None:
    """:func:`_storage_error`, and a refused value as :class:`UnstorableData`."""
    unavailable = _storage_error(exc)
    if unavailable is not None:
        return unavailable
    refused = _refused_data(exc)
    if refused is None:
        return None
    # The driver's message may quote the value it refused: cleaned, to be logged and stored.
    return UnstorableData(storable_text(f"{type(refused).__name__}: {refused}", 500))


#: Decorator for writes of data from the web: "the database is down" and "the database refused
#: this data" become two domain exceptions, so callers retry the first and set apart the second.
unavailable_or_unstorable = translate_errors(_write_error)
