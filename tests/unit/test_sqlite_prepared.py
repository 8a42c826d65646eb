"""An outcome write bound before SQLite's writer lock stores what SQLAlchemy would store, and
reads back the jobs still held as the caller's own ids."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from taskcrawler.storage.engine import JSON_CODEC
from taskcrawler.storage.rows import LEASE_ENDED, PENDING, PROCESSING
from taskcrawler.storage.sqlite.prepared import held_query, prepare_many
from taskcrawler.storage.tables import jobs

_GUARDED = sa.and_(
    jobs.c.id == sa.bindparam("b_id"),
    jobs.c.lease_token == sa.bindparam("b_token"),
    jobs.c.status == PROCESSING,
)


def _engine() -> sa.Engine:
    engine = sa.create_engine("sqlite://", **JSON_CODEC)
    jobs.create(engine)
    return engine


def _processing_job(conn: sa.Connection, token: uuid.UUID) -> uuid.UUID:
    job_id = uuid.uuid4()
    now = datetime(2026, 12, 7, tzinfo=UTC)
    conn.execute(
        jobs.insert(),
        {
            "id": job_id,
            "url": "https://example.test/",
            "url_key": job_id.hex,  # unique with the owner
            "host": "example.test",
            "status": PROCESSING,
            "lease_token": token,
            "created_at": now,
        },
    )
    return job_id


def _stored(conn: sa.Connection, job_id: uuid.UUID) -> dict[str, Any]:
    """The row as stored (no type's result processing), but for its keys."""
    columns = ", ".join(jobs.c.keys())
    raw = conn.exec_driver_sql(f"SELECT {columns} FROM jobs WHERE id = ?", (job_id.hex,))
    return {key: value for key, value in raw.one()._mapping.items() if key not in {"id", "url_key"}}


def test_a_prepared_update_stores_what_sqlalchemy_stores() -> None:
    token = uuid.uuid4()
    finished = datetime(2026, 12, 7, 9, 30, 1, 123456, tzinfo=UTC)
    values = {
        "status": "completed",
        "result": {"markdown": "é", "links": [1, None]},
        "unchanged": False,
        "finished_at": finished,
        "error_code": None,
    }
    stmt = jobs.update().where(_GUARDED).values({k: sa.bindparam(k) for k in values} | LEASE_ENDED)
    with _engine().begin() as conn:
        by_sqlalchemy, prepared = _processing_job(conn, token), _processing_job(conn, token)
        conn.execute(stmt, [values | {"b_id": by_sqlalchemy, "b_token": token}])
        prepare_many(conn.dialect, stmt, [values | {"b_id": prepared, "b_token": token}]).run(conn)
        assert _stored(conn, prepared) == _stored(conn, by_sqlalchemy)
        assert _stored(conn, prepared)["status"] == "completed"


def test_the_held_jobs_are_those_still_leased_under_their_own_token() -> None:
    token, other = uuid.uuid4(), uuid.uuid4()
    with _engine().begin() as conn:
        held, relet, done = (_processing_job(conn, t) for t in (token, other, token))
        conn.execute(jobs.update().where(jobs.c.id == done).values(status=PENDING))
        query = held_query(conn.dialect, [(held, token), (relet, token), (done, token)])
        assert query.run(conn) == {held}
