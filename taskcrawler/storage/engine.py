"""Engines: what both backends' engines share, and the engine a URL's backend builds."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncEngine


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


#: JSON columns are encoded and decoded by orjson on every backend.
JSON_CODEC: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    """The engine for ``url``, tuned by its backend."""
    from taskcrawler.storage.backend import backend_for

    return backend_for(url).create_engine(url, pool_size=pool_size)
