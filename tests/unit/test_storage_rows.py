import uuid

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from taskcrawler.storage.adapters import backend_for
from taskcrawler.storage.tables import jobs


def _sql(dialect: str, size: int) -> str:
    ids = [uuid.uuid4() for _ in range(size)]
    backend = backend_for(f"{dialect}://")
    stmt = sa.select(jobs.c.id).where(backend.any_of(jobs.c.id, ids))
    module = postgresql if dialect == "postgresql" else sqlite
    return str(stmt.compile(dialect=module.dialect(), compile_kwargs={"render_postcompile": True}))


def test_on_postgresql_every_batch_size_is_one_statement() -> None:
    assert _sql("postgresql", 1) == _sql("postgresql", 300)
    assert "= ANY" in _sql("postgresql", 3)


def test_elsewhere_it_is_an_in_list() -> None:
    assert " IN (" in _sql("sqlite", 3)
