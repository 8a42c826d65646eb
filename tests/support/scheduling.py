"""How ``pytest -n N --dist loadfile`` (``make test``) hands the suite to its processes.

pytest-xdist's loadfile gives a process a whole file at a time, so a module's fixtures (its
generated site, its served app) start once; it hands the files out by how many tests they hold,
most first. That puts a file of one long test last, where one process runs it alone while the
other has nothing left. Here the work units go out longest first, as far as the layer of a file
tells (a test that starts processes, browsers or a fuzz run costs seconds, a unit test
milliseconds), and the unit tests even out the processes' ends.

A test parametrized with a ``shard`` id (``test_x[shard-1-of-4]``) is a work unit of its own:
one long run split in parts that the processes share.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

#: Where a file's path begins, in the order its work units go out; what matches none goes
#: after them all, before the unit tests, ordered by how many tests it holds.
LONGEST_FIRST = (
    "tests/e2e/test_fuzz_inputs",
    "tests/e2e/test_schemathesis",
    "tests/bench/",
    "tests/faults/",
    "tests/multihost/",
    "tests/browser/",
    "tests/e2e/",
    "tests/integration/",
)
#: The unit tests go last: many short work units.
LAST = "tests/unit/"
#: The parametrization id that makes a test its own work unit.
SHARD = "[shard-"


def work_unit(nodeid: str) -> str:
    """A shard's nodeid, or the file of any other test."""
    return nodeid if SHARD in nodeid else nodeid.split("::", 1)[0]


def rank(unit: str, size: int) -> tuple[int, int]:
    """The sort key of a work unit of ``size`` tests: smaller goes out first."""
    for position, prefix in enumerate(LONGEST_FIRST):
        if unit.startswith(prefix):
            return position, -size
    if unit.startswith(LAST):
        return len(LONGEST_FIRST) + 1, -size
    return len(LONGEST_FIRST), -size


class LongestFirstScheduling(LoadFileScheduling):
    """loadfile with :func:`work_unit`'s units, handed out in :func:`rank`'s order."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        # The first unit handed out: the queue is complete, in xdist's order; put it in ours.
        if not getattr(self, "_ordered", False):
            ordered = sorted(self.workqueue.items(), key=lambda item: rank(item[0], len(item[1])))
            self.workqueue.clear()
            self.workqueue.update(ordered)
            self._ordered = True
        super()._assign_work_unit(node)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadFileScheduling | None:
    """Used for ``--dist loadfile``; any other mode is xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    return LongestFirstScheduling(config, log)
