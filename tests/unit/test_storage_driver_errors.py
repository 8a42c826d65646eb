"""asyncpg's own errors, raised straight from the driver (a pinned connection) or wrapped by
SQLAlchemy, are told apart as they were when storage/errors.py imported asyncpg: the module
now finds the driver's classes by name among the loaded modules, and a name that no longer
resolves (``asyncpg.exceptions._base`` is private) would stop recognising them without a word.
"""

from __future__ import annotations

import asyncpg
import pytest
import sqlalchemy as sa
from asyncpg.exceptions import _base as asyncpg_base

from taskcrawler.domain import StorageUnavailable, UnstorableData
from taskcrawler.storage.errors import _rolled_back, _storage_error, _write_error

E = asyncpg.exceptions

UNAVAILABLE = [
    E.TooManyConnectionsError("sorry, too many clients already"),
    E.CannotConnectNowError("the database system is starting up"),
    E.AdminShutdownError("terminating connection due to administrator command"),
    E.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    E.SerializationError("could not serialize access"),
    E.DeadlockDetectedError("deadlock detected"),
]
UNSTORABLE = [
    E.UntranslatableCharacterError("unsupported Unicode escape sequence"),
    E.CharacterNotInRepertoireError("invalid byte sequence for encoding"),
    E.StringDataRightTruncationError("value too long"),
    E.ProgramLimitExceededError("string too long to represent as jsonb string"),
    asyncpg_base.DataError("invalid input for query argument $1"),  # refused before it was sent
]
NEITHER = [E.UniqueViolationError("duplicate key"), E.PostgresError("other"), ValueError("v")]


def _as_raised(error: Exception) -> list[Exception]:
    """``error`` from the driver itself, and as SQLAlchemy hands it on."""
    return [error, sa.exc.DBAPIError("SELECT 1", {}, error)]


@pytest.mark.parametrize("error", UNAVAILABLE, ids=lambda e: type(e).__name__)
def test_a_database_going_away_is_unavailable(error: Exception) -> None:
    for raised in _as_raised(error):
        assert isinstance(_storage_error(raised), StorageUnavailable), raised
        assert isinstance(_write_error(raised), StorageUnavailable), raised


def test_a_refused_connection_is_unavailable() -> None:
    # Raised by the driver's connect, which SQLAlchemy passes on as it is.
    refused = ConnectionRefusedError(111, "Connect call failed")
    assert isinstance(_write_error(refused), StorageUnavailable)


@pytest.mark.parametrize("error", UNSTORABLE, ids=lambda e: type(e).__name__)
def test_a_refused_value_is_unstorable(error: Exception) -> None:
    for raised in _as_raised(error):
        assert _storage_error(raised) is None, raised
        assert isinstance(_write_error(raised), UnstorableData), raised


@pytest.mark.parametrize("error", NEITHER, ids=lambda e: type(e).__name__)
def test_another_error_goes_through(error: Exception) -> None:
    for raised in _as_raised(error):
        assert _write_error(raised) is None, raised


def test_a_rolled_back_transaction_is_told_apart() -> None:
    assert _rolled_back(sa.exc.DBAPIError("UPDATE", {}, E.SerializationError("x")))
    assert _rolled_back(E.DeadlockDetectedError("x"))
    assert not _rolled_back(E.TooManyConnectionsError("x"))
