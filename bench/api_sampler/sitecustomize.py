"""A CPU sampler for the API process of a deployment, loaded by ``bench.api_cpu``.

Put first on ``PYTHONPATH`` with ``TASKCRAWLER_BENCH_SAMPLES`` naming a file: in a process
started as ``python -m taskcrawler api``, every millisecond of the process's CPU
(``ITIMER_PROF``) records the Python stack it interrupted. SIGUSR1 clears the counts (the
start-up's are not wanted), SIGUSR2 writes them to that file as collapsed stacks. Other
processes ignore it.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from types import FrameType

_PATH = os.environ.get("TASKCRAWLER_BENCH_SAMPLES")
_INTERVAL = 0.001
_DEPTH = 60


def _frame_name(frame: FrameType) -> str:
    code = frame.f_code
    path = code.co_filename
    for marker in ("site-packages/", "/taskcrawler/", "/lib/python3"):
        at = path.rfind(marker)
        if at >= 0:
            path = path[at + len(marker) :] if marker != "/taskcrawler/" else path[at + 1 :]
            break
    return f"{path}:{code.co_qualname}"


def _start(path: str) -> None:
    stacks: Counter[str] = Counter()

    def sample(signum: int, frame: FrameType | None) -> None:
        names = []
        while frame is not None and len(names) < _DEPTH:
            names.append(_frame_name(frame))
            frame = frame.f_back
        stacks[";".join(reversed(names))] += 1

    def clear(signum: int, frame: FrameType | None) -> None:
        stacks.clear()

    def write(signum: int, frame: FrameType | None) -> None:
        with open(path, "w", encoding="utf-8") as out:
            for stack, count in list(stacks.items()):
                out.write(f"{stack} {count}\n")

    signal.signal(signal.SIGPROF, sample)
    signal.signal(signal.SIGUSR1, clear)
    signal.signal(signal.SIGUSR2, write)
    signal.setitimer(signal.ITIMER_PROF, _INTERVAL, _INTERVAL)


if _PATH and "api" in sys.argv:
    _start(_PATH)
