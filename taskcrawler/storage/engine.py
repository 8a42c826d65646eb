"""What both backends' engines share (the engine a URL's backend builds:
:func:`taskcrawler.storage.adapters.create_engine`)."""

from __future__ import annotations

from typing import Any

import orjson


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


#: JSON columns are encoded and decoded by orjson on every backend.
JSON_CODEC: dict[str, Any] = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}
