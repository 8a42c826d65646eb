"""Where pages are parsed (taskcrawler/worker/parsing.py), and what one page can do to others."""

import asyncio
import os
from collections.abc import AsyncIterator

import pytest

from taskcrawler.common.processes import ChildDied, ProcessPool
from taskcrawler.extract import Extraction, extract
from taskcrawler.worker.parsing import PageParser, ParseCrashed, ParseTimeout
from tests.support.extractors import allocate, hostile, pid_title, unloadable_error

PAGE = b"<html><head><title>Big one</title></head><body>" + b"<p>words here</p>" * 40_000
URL = "http://x.test/"


@pytest.fixture
async def parser() -> AsyncIterator[PageParser]:
    # Every page goes to the processes: the lanes have a test of their own.
    parser = PageParser(hostile, timeout=1.0, processes=2, inline_limit=0, thread_limit=0)
    yield parser
    await parser.aclose()


async def parse(parser: PageParser, body: bytes) -> Extraction:
    return await parser.extract(body, url=URL, charset=None, formats=["metadata"])


def test_each_page_has_its_lane() -> None:
    parser = PageParser()
    assert parser.lane(b"<title>small</title>") == "inline"
    assert parser.lane(b"<b>" * 2_000) == "thread"  # small, but too many tags to parse inline
    assert parser.lane(b"x" * 100_000) == "thread"
    assert parser.lane(b"<div>" * 6_000) == "process"  # 30 KB, but nesting could be costly
    assert parser.lane(b"x" * 600_000) == "process"


async def test_pages_in_every_lane_give_the_same_result() -> None:
    inline = extract(PAGE, url=URL, charset=None, formats=["metadata"])
    for limits in ({}, {"inline_limit": 0}, {"inline_limit": 0, "thread_limit": 0}):
        parser = PageParser(**limits)  # type: ignore[arg-type]
        try:
            result = await parse(parser, PAGE)
        finally:
            await parser.aclose()
        assert result.title == inline.title == "Big one"
        assert result.metadata == inline.metadata


async def test_where_each_page_is_parsed() -> None:
    parser = PageParser(pid_title, inline_limit=1024)
    try:
        small = await parse(parser, b"<title>s</title>")
        big = await parse(parser, PAGE)
    finally:
        await parser.aclose()
    assert small.title == f"s|{os.getpid()}"
    assert big.title is not None
    assert big.title.startswith("Big one|")
    assert big.title != f"Big one|{os.getpid()}"


async def test_a_parse_past_its_deadline_is_killed_and_its_process_replaced(
    parser: PageParser,
) -> None:
    before = await parse(parser, b"<title>before</title>")
    with pytest.raises(ParseTimeout, match="over 1s"):
        await parse(parser, b"hang")  # in the process that parsed the first page
    assert parser.pool.killed == 1
    after = await parse(parser, b"<title>after</title>")
    assert before.title is not None and after.title is not None
    assert after.title.startswith("after|")
    assert after.title.split("|")[1] != before.title.split("|")[1]  # a new process
    assert parser.pool.started == 2


async def test_a_hung_parse_holds_one_process_and_no_other_page(parser: PageParser) -> None:
    hung = asyncio.create_task(parse(parser, b"hang"))
    for n in range(5):  # one after the other, in the other process, while the first hangs
        result = await parse(parser, b"<title>%d</title>" % n)
        assert result.title is not None and result.title.startswith(f"{n}|")
    assert not hung.done()
    with pytest.raises(ParseTimeout):
        await hung


async def test_a_crashed_parser_fails_its_page_and_is_replaced(parser: PageParser) -> None:
    with pytest.raises(ParseCrashed, match="exit code 3"):
        await parse(parser, b"crash")
    result = await parse(parser, b"<title>next</title>")
    assert result.title is not None and result.title.startswith("next|")


async def test_a_parse_that_would_take_too_much_memory_fails_its_page_alone() -> None:
    parser = PageParser(hostile, timeout=30.0, processes=1, thread_limit=0, memory_mb=256)
    try:
        with pytest.raises(ParseCrashed, match="more than the 256 MB"):
            await parse(parser, b"hog")
        result = await parse(parser, b"<title>next</title>")
    finally:
        await parser.aclose()
    assert result.title is not None and result.title.startswith("next|")


async def test_a_process_pool_child_may_grow_by_its_limit_and_no_more() -> None:
    pool = ProcessPool(1, timeout=30.0, memory_limit_mb=256)
    try:
        assert await pool.run(allocate, 128 * 2**20) == 128 * 2**20
        with pytest.raises(MemoryError):
            await pool.run(allocate, 512 * 2**20)
        with pytest.raises(MemoryError):  # an answer too big to send back within the limit
            await pool.run(bytearray, 200 * 2**20)
        assert pool.started == 1
    finally:
        await pool.aclose()


async def test_an_extractor_error_comes_back_as_itself(parser: PageParser) -> None:
    with pytest.raises(ValueError, match="no such page"):
        await parse(parser, b"fail")
    assert parser.pool.killed == 0  # the process is fine and is used again
    await parse(parser, b"<title>next</title>")
    assert parser.pool.started == 1


async def test_a_cancelled_parse_kills_its_process(parser: PageParser) -> None:
    await parse(parser, b"<title>warm</title>")
    [child] = parser.pool._idle
    hung = asyncio.create_task(parse(parser, b"hang"))
    await asyncio.sleep(0)  # the task takes the idle process and sends it the page
    assert not parser.pool._idle
    hung.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hung
    assert child.process.returncode is not None
    assert not parser.pool._children


async def test_closing_the_pool_ends_its_processes() -> None:
    pool = ProcessPool(2, timeout=5.0)
    await asyncio.gather(pool.run(os.getpid), pool.run(os.getpid))
    children = list(pool._children)
    assert len(children) == 2
    await pool.aclose()
    assert all(child.process.returncode == 0 for child in children)


async def test_a_process_that_holds_too_much_memory_is_replaced() -> None:
    pool = ProcessPool(1, timeout=30.0, recycle_above_mb=0)  # every process holds more
    try:
        first, second = await pool.run(os.getpid), await pool.run(os.getpid)
    finally:
        await pool.aclose()
    assert first != second
    assert (pool.started, pool.recycled, pool.killed) == (2, 2, 0)


async def test_a_process_within_its_memory_is_used_again() -> None:
    pool = ProcessPool(1, timeout=30.0)
    try:
        first, second = await pool.run(os.getpid), await pool.run(os.getpid)
    finally:
        await pool.aclose()
    assert first == second
    assert (pool.started, pool.recycled) == (1, 0)


async def test_an_idle_process_that_died_is_replaced_for_the_next_call() -> None:
    # The kernel's OOM killer ends the biggest process, which an idle parse child may be:
    # the next page must not fail for it (it failed with "Connection lost", as an extraction
    # error, the job FAILED for good).
    pool = ProcessPool(1, timeout=30.0)
    try:
        first = await pool.run(os.getpid)
        [child] = pool._idle
        child.process.kill()
        await child.process.wait()
        second = await pool.run(os.getpid)
    finally:
        await pool.aclose()
    assert second != first
    assert pool.started == 2
    assert child not in pool._children


async def test_a_process_that_dies_before_it_reads_its_call_says_so() -> None:
    pool = ProcessPool(1, timeout=30.0)
    try:
        await pool.run(os.getpid)
        [child] = pool._idle
        child.process.kill()
        await child.process.wait()
        with pytest.raises(ChildDied, match="ended"):
            await child.call(b"any call")
    finally:
        await pool.aclose()


async def test_an_answer_that_cannot_be_read_leaves_no_process_behind() -> None:
    pool = ProcessPool(1, timeout=30.0)
    try:
        with pytest.raises(TypeError):
            await pool.run(unloadable_error)
        # Every process the pool holds is one it may hand a call (none lives on, unused).
        assert set(pool._idle) == pool._children
        await pool.run(os.getpid)
    finally:
        await pool.aclose()
