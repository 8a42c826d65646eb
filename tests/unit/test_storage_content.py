"""Archive rows: plain gzip whoever compressed them, packed on the loop unless the batch is big."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import uuid
from typing import Any

import pytest

from taskcrawler.domain.pages import ContentRecord, FetchedPage, PageContent
from taskcrawler.storage import content
from taskcrawler.storage.content import content_rows, prepare_content


def _record(body: bytes) -> ContentRecord:
    page = FetchedPage(
        url="https://example.com/a",
        final_url="https://example.com/a",
        status=200,
        headers={"content-type": "text/html"},
        content_type="text/html",
        charset="utf-8",
        body=body,
    )
    return ContentRecord(uuid.uuid4(), "", PageContent(archive=page))


def test_archive_rows_are_plain_gzip_with_the_body_hash_and_size() -> None:
    body = b"<html><title>t</title><p>" + "déjà vu ".encode() * 2000 + b"</p></html>"
    (row,) = content_rows([_record(body)]).archives
    assert gzip.decompress(row["body_gz"]) == body
    assert row["sha256"] == hashlib.sha256(body).hexdigest()
    assert row["size"] == len(body)
    assert len(row["body_gz"]) < len(body) / 4


def test_the_same_body_is_archived_as_the_same_bytes() -> None:
    # mtime=0 in the gzip header: otherwise every copy of a page would differ by its timestamp
    body = b"<p>same</p>" * 500
    first, second = (content_rows([_record(body)]).archives[0]["body_gz"] for _ in range(2))
    assert first == second


async def _pack(records: list[ContentRecord], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Runs prepare_content and says where: ``loop`` or ``thread``."""
    where: list[str] = []
    real = asyncio.to_thread

    async def recording_to_thread(func: Any, /, *args: Any) -> Any:
        where.append("thread")
        return await real(func, *args)

    monkeypatch.setattr(content.asyncio, "to_thread", recording_to_thread)
    rows = await prepare_content(records)
    assert [row["size"] for row in rows.archives] == [
        len(r.content.archive.body) for r in records if r.content.archive
    ]
    return where or ["loop"]


async def test_a_small_batch_is_packed_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [_record(b"<p>x</p>" * 100) for _ in range(3)]
    assert await _pack(records, monkeypatch) == ["loop"]


async def test_a_batch_of_big_bodies_is_packed_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(content, "INLINE_PACK_BYTES", 1000)
    records = [_record(b"<p>x</p>" * 100) for _ in range(2)]  # 1,600 bytes in all
    assert await _pack(records, monkeypatch) == ["thread"]


async def test_a_batch_without_archives_packs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [ContentRecord(uuid.uuid4(), "", PageContent(texts={"text": "hello"}))]
    rows = await prepare_content(records)
    assert rows.archives == [] and rows.texts[0]["body"] == "hello"
