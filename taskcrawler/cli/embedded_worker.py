"""``python -m taskcrawler.cli.embedded_worker``: the worker process of ``taskcrawler serve``,
and each of the processes of a ``taskcrawler worker`` that runs several.

Started and supervised by ``serve`` or ``worker`` (:mod:`taskcrawler.worker.process`), never
by hand. It is ``taskcrawler worker`` with two differences: job ids come over the socket given
as ``--wake-fd`` when there is no Redis, and it stops by itself when its parent is gone (the
socket closed, or the pipe given as ``--parent-fd`` read to its end). ``--no-sweeper`` and
``--no-scheduled`` leave those duties to another process of the same ``taskcrawler worker``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskcrawler.worker.runner import Duties

log = logging.getLogger(__name__)


async def _run(
    wake_fd: int | None, parent_fd: int | None, metrics_socket: str | None, duties: Duties
) -> None:
    from taskcrawler import bootstrap
    from taskcrawler.running import run_worker
    from taskcrawler.settings import get_settings
    from taskcrawler.worker.process import parent_gone as pipe_closed
    from taskcrawler.worker.runner import collect_less_often, lower_priority

    settings = get_settings()
    lower_priority(settings.worker_nice)
    collect_less_often()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    # Ctrl-C in a terminal reaches the whole process group: the supervisor stops this process
    # (with SIGTERM) once the API has shut down, not the keyboard.
    loop.add_signal_handler(signal.SIGINT, lambda: None)
    runtime, parent_gone = await bootstrap.worker_process_runtime(settings, wake_fd)
    if parent_fd is not None:
        parent_gone = pipe_closed(parent_fd)

    async def stop_when_parent_gone(gone: asyncio.Event) -> None:
        await gone.wait()
        log.warning("the parent process is gone: stopping")
        stop.set()

    watcher = (
        None if parent_gone is None else asyncio.create_task(stop_when_parent_gone(parent_gone))
    )
    try:
        await run_worker(
            settings,
            stop=stop,
            runtime=runtime,
            serve_metrics_port=True,
            metrics_socket=metrics_socket,
            duties=duties,
        )
    finally:
        if watcher is not None:
            watcher.cancel()
        await runtime.close()


def main(argv: Sequence[str] | None = None) -> int:
    from taskcrawler.cli.logs import configure_logging
    from taskcrawler.cli.loop import run_async
    from taskcrawler.cli.main import freeze_startup_heap
    from taskcrawler.settings import get_settings
    from taskcrawler.worker.runner import Duties

    parser = argparse.ArgumentParser(prog="python -m taskcrawler.cli.embedded_worker")
    parser.add_argument("--wake-fd", type=int, help="the socket job ids arrive on")
    parser.add_argument("--parent-fd", type=int, help="a pipe that ends when the parent does")
    parser.add_argument("--metrics-socket", help="a Unix socket to serve the metrics on")
    parser.add_argument("--no-sweeper", action="store_true", help="another process sweeps")
    parser.add_argument(
        "--no-scheduled", action="store_true", help="another process runs monitors and webhooks"
    )
    args = parser.parse_args(argv)
    settings = get_settings()
    configure_logging(settings.log_format, settings.log_level)
    freeze_startup_heap()
    duties = Duties(sweeper=not args.no_sweeper, scheduled=not args.no_scheduled)
    run_async(_run(args.wake_fd, args.parent_fd, args.metrics_socket, duties))
    return 0


if __name__ == "__main__":
    sys.exit(main())
