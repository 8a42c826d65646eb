"""The LRU cache keeps its bound, and forgets the least recently used entry first."""

from __future__ import annotations

import pytest

from taskcrawler.common.lru import LruCache


def test_it_never_holds_more_than_its_size_and_forgets_the_least_recently_used() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.set("a", 1)
    cache.set("b", 2)
    assert cache.get("a") == 1  # now b is the least recently used
    cache.set("c", 3)
    assert len(cache) == 2
    assert ("a" in cache, "b" in cache, "c" in cache) == (True, False, True)
    assert cache.get("b") is None
    cache.set("a", 10)  # set again: replaced, and the most recently used
    cache.set("d", 4)
    assert (cache.get("a"), cache.get("c"), cache.get("d")) == (10, None, 4)


def test_pop_and_clear_forget_entries_and_ignore_unknown_ones() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.set("a", 1)
    cache.set("b", 2)
    cache.pop("a")
    cache.pop("never")
    assert ("a" in cache, len(cache)) == (False, 1)
    cache.clear()
    assert len(cache) == 0


def test_it_holds_at_least_one_entry() -> None:
    with pytest.raises(ValueError, match="at least one"):
        LruCache(0)
