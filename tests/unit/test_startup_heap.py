"""Objects built at start-up are frozen, so full collections stop walking them."""

from __future__ import annotations

import gc

from taskcrawler.cli.main import freeze_startup_heap


def test_startup_objects_are_frozen_out_of_later_collections() -> None:
    assert gc.get_freeze_count() == 0
    try:
        freeze_startup_heap()
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # this test process has pytest and taskcrawler loaded
        made_later = [[] for _ in range(1000)]
        # Only what existed when it ran (frozen objects may still be freed, never added to).
        assert gc.get_freeze_count() <= frozen
        del made_later
    finally:
        gc.unfreeze()
