"""The worker's chunks step: only for jobs that asked, only after a page was extracted."""

from __future__ import annotations

from uuid import uuid4

from taskcrawler.domain import ClaimedJob, Outcome
from taskcrawler.domain.chunks import MAX_CONTEXT_CHARS, chunk_context, embedded_text
from taskcrawler.extract.chunking import ChunkingConfig, chunk_page
from taskcrawler.extract.stored import extracted_formats
from taskcrawler.worker.chunking import with_chunks


def _outcome(formats: tuple[str, ...], **fields: object) -> Outcome:
    job = ClaimedJob(uuid4(), "http://a.test/", 0, uuid4(), formats=formats)
    return Outcome(job=job, http_status=200, **fields)  # type: ignore[arg-type]


async def test_jobs_that_did_not_ask_and_failed_attempts_pass_through() -> None:
    plain = _outcome(("metadata",))
    assert await with_chunks(None, plain, "# Title") is plain
    failed = _outcome(("chunks",), error_code="timeout", error_message="slow")
    assert await with_chunks(None, failed, None) is failed


async def test_a_worker_without_an_embedder_fails_chunks_jobs_for_good() -> None:
    outcome = await with_chunks(None, _outcome(("chunks",)), "# Title")
    assert (outcome.error_code, outcome.transient) == ("embedding_failed", False)
    assert outcome.http_status == 200


def test_chunks_are_made_from_markdown_which_extraction_is_asked_for() -> None:
    assert extracted_formats(("metadata", "chunks")) == ("metadata", "markdown")
    assert extracted_formats(("markdown", "chunks")) == ("markdown",)
    assert extracted_formats(("links",)) == ("links",)


def test_a_chunk_is_embedded_with_its_page_title_and_headings() -> None:
    [chunk] = chunk_page("# Install\n\nRun pip.", "Guide", ChunkingConfig())
    assert chunk.context == "Guide > Install"
    assert chunk.text == "# Install\nRun pip."
    assert embedded_text(chunk.context, chunk.text) == "Guide > Install\n# Install\nRun pip."
    assert embedded_text("", "Alone.") == "Alone."


def test_a_title_the_first_heading_repeats_is_said_once() -> None:
    assert chunk_context("Install", ["install", "Linux"]) == "install > Linux"
    assert chunk_context(None, ["A"]) == "A"
    assert chunk_context("  Spaced \n title ", []) == "Spaced title"
    assert chunk_context("", []) == ""
    assert len(chunk_context("t" * 5000, ["h" * 200] * 6)) == MAX_CONTEXT_CHARS


async def test_a_huge_page_keeps_its_first_chunks_only() -> None:
    from taskcrawler.domain.chunks import PageChunks
    from taskcrawler.extract.chunking import MAX_CHUNKS_PER_PAGE, ChunkingConfig
    from taskcrawler.worker.chunking import PageChunker

    class Store:
        stored: PageChunks | None = None

        async def vectors_available(self) -> bool:
            return True

        async def source_hash(self, job_id: object) -> None:
            return None

        async def replace(
            self, page: PageChunks, source_hash: str, *, lease_token: object = None
        ) -> None:
            self.stored = page

    class Embedder:
        model = "fake/1"

        async def embed(self, texts: list[str], *, purpose: str = "document") -> list[list[float]]:
            return [[1.0] for _ in texts]

    store = Store()
    chunker = PageChunker(store, Embedder(), ChunkingConfig(8, 0))  # type: ignore[arg-type]
    markdown = "\n\n".join(f"Paragraph {n} has words." for n in range(MAX_CHUNKS_PER_PAGE + 50))
    outcome = await chunker.attach(_outcome(("chunks",)), markdown)
    assert outcome.result == {"chunks": {"count": MAX_CHUNKS_PER_PAGE, "model": "fake/1"}}
    assert store.stored is not None and len(store.stored.chunks) == MAX_CHUNKS_PER_PAGE
