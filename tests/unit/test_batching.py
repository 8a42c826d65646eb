import asyncio
from collections.abc import Sequence

import pytest

from taskcrawler.common.batching import Coalescer


async def test_concurrent_submissions_share_flushes() -> None:
    batches: list[list[int]] = []

    async def flush(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        await asyncio.sleep(0.01)
        return [i * 2 for i in items]

    coalescer: Coalescer[int, int] = Coalescer(flush, max_batch=50)
    results = await asyncio.gather(*(coalescer.submit(i) for i in range(200)))
    assert results == [i * 2 for i in range(200)]
    assert sorted(i for b in batches for i in b) == list(range(200))
    assert len(batches) < 20  # grouped, not one flush per item
    assert max(len(b) for b in batches) <= 50


async def test_a_failed_flush_fails_its_callers_and_the_next_batch_still_runs() -> None:
    calls = 0

    async def flush(items: Sequence[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        return list(items)

    coalescer: Coalescer[int, int] = Coalescer(flush)
    with pytest.raises(RuntimeError, match="boom"):
        await coalescer.submit(1)
    assert await coalescer.submit(2) == 2


async def test_submit_many_keeps_order() -> None:
    async def flush(items: Sequence[str]) -> list[str]:
        return [s.upper() for s in items]

    coalescer: Coalescer[str, str] = Coalescer(flush, max_batch=3)
    assert await coalescer.submit_many(list("abcdefg")) == list("ABCDEFG")


@pytest.mark.parametrize("concurrency", [1, 2, 3])
async def test_no_more_flushes_overlap_than_the_concurrency(concurrency: int) -> None:
    running = peak = 0

    async def flush(items: Sequence[int]) -> list[int]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.005)
        running -= 1
        return list(items)

    coalescer: Coalescer[int, int] = Coalescer(flush, max_batch=10, concurrency=concurrency)
    results = await asyncio.wait_for(
        asyncio.gather(*(coalescer.submit(i) for i in range(100))), timeout=5
    )
    assert results == list(range(100))
    assert peak == concurrency


@pytest.mark.parametrize("concurrency", [1, 2])
async def test_an_item_submitted_as_the_last_drainer_finishes_is_still_flushed(
    concurrency: int,
) -> None:
    flushed: list[int] = []

    async def flush(items: Sequence[int]) -> list[int]:
        flushed.extend(items)
        return list(items)

    coalescer: Coalescer[int, int] = Coalescer(flush, concurrency=concurrency)
    for i in range(20):
        # each submit lands right after the previous drainer found nothing left to do
        assert await asyncio.wait_for(coalescer.submit(i), timeout=1) == i
    assert flushed == list(range(20))


def test_concurrency_must_be_positive() -> None:
    async def flush(items: Sequence[int]) -> list[int]:
        return list(items)

    with pytest.raises(ValueError, match="concurrency"):
        Coalescer(flush, concurrency=0)


class Unreachable(Exception):
    """A failure every item of a batch shares (a dependency's outage)."""


async def test_a_failure_reaches_only_the_caller_whose_item_causes_it() -> None:
    """A batch that fails is flushed again one item at a time: the other callers, who only
    waited beside the bad item, get their results."""
    batches: list[list[int]] = []

    async def flush(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        if 13 in items:
            raise ValueError("13 cannot be stored")
        return [i * 2 for i in items]

    coalescer: Coalescer[int, int] = Coalescer(flush)
    results = await asyncio.gather(
        *(coalescer.submit(i) for i in (11, 12, 13, 14)), return_exceptions=True
    )
    assert results[:2] == [22, 24] and results[3] == 28
    assert isinstance(results[2], ValueError)
    assert batches[-4:] == [[11], [12], [13], [14]]


async def test_a_shared_failure_reaches_the_whole_batch_without_flushing_each() -> None:
    batches: list[list[int]] = []

    async def flush(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        raise Unreachable("the database is down")

    coalescer: Coalescer[int, int] = Coalescer(flush, shared=(Unreachable,))
    results = await asyncio.gather(*(coalescer.submit(i) for i in range(4)), return_exceptions=True)
    assert all(isinstance(r, Unreachable) for r in results)
    assert sorted(i for b in batches for i in b) == list(range(4))  # each flushed once


async def test_a_flush_answering_the_wrong_number_of_results_fails_its_callers() -> None:
    """Its callers get the error: they waited for ever, their futures never settled."""

    async def flush(items: Sequence[int]) -> list[int]:
        return []

    coalescer: Coalescer[int, int] = Coalescer(flush)
    with pytest.raises(ValueError, match="zip"):
        await asyncio.wait_for(coalescer.submit(1), timeout=5)
