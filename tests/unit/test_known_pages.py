"""What a process remembers of its crawls' committed pages."""

from taskcrawler.storage.crawls import KnownPages


def test_a_page_is_known_at_its_depth_and_deeper() -> None:
    known = KnownPages()
    known.learn({"k": 2})
    assert known.has("k", 2)
    assert known.has("k", 5)
    assert not known.has("k", 1)  # a shorter path: looked up
    assert not known.has("other", 9)


def test_the_shortest_depth_learned_is_kept() -> None:
    known = KnownPages()
    known.learn({"k": 3})
    known.learn({"k": 1})
    known.learn({"k": 4})
    assert known.has("k", 1)


def test_past_its_capacity_the_oldest_are_forgotten() -> None:
    known = KnownPages(capacity=3)
    known.learn({"a": 0, "b": 0, "c": 0})
    known.learn({"a": 0})  # learned again: the newest
    known.learn({"d": 0})
    assert len(known) == 3
    assert not known.has("b", 0)
    assert all(known.has(key, 0) for key in ("a", "c", "d"))
