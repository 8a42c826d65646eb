"""A long list streamed a slice at a time is the same JSON as the whole document."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from taskcrawler.api.streamed import SLICE, json_with_list


async def body_of(fields: dict[str, Any], items: list[str], **options: Any) -> bytes:
    response = json_with_list(fields, "links", items, **options)
    assert response.media_type == "application/json"
    return b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[misc]


@pytest.mark.parametrize("count", [0, 1, SLICE, 2 * SLICE + 1])
@pytest.mark.parametrize("fields", [{}, {"success": True, "warnings": ['a "quoted" one']}])
async def test_the_same_json_as_the_whole_document(count: int, fields: dict[str, Any]) -> None:
    items = [f'http://a.test/{n}?q=\u00e9"' for n in range(count)]
    assert orjson.loads(await body_of(fields, items)) == {**fields, "links": items}
    objects = orjson.loads(await body_of(fields, items, item=lambda url: {"url": url}))
    assert objects == {**fields, "links": [{"url": url} for url in items]}
