"""The embedded mode's queue across two processes: job ids over a Unix socket pair.

``taskcrawler serve`` runs its worker in a child process (the API keeps its own core). The API
publishes through a :class:`PipeSender`: each id is written as its 16 bytes to the socket, a
non-blocking write of a few microseconds. The worker consumes from a :class:`PipeReceiver`, an
in-process queue that a reader task fills from the socket, so an id published reaches a waiting
worker at once (no polling, no idle queries against SQLite).

Like every queue here it is a hint, not the truth. Ids published while no worker process runs,
or still in the socket when one dies, are lost; the next worker's first sweep publishes every
PENDING job again (the queue is not ``durable``), and leases recover the jobs it held.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Sequence
from uuid import UUID

from taskcrawler.queue.memory import MemoryQueue

log = logging.getLogger(__name__)

ID_BYTES = 16
#: Ids waiting in this process for the socket, at most: past it a publish is dropped (the
#: database keeps the job; the sweeper publishes it again) rather than grow without bound while
#: the worker process is stuck.
MAX_BUFFERED_BYTES = 16 * 1024 * 1024
READ_BYTES = 64 * 1024


class PipeSender:
    """The API's side: publishes to whichever worker process is attached, else to nobody."""

    durable = False

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self.dropped = 0

    async def attach(self, sock: socket.socket) -> None:
        """Send to ``sock`` from now on (a new worker process's end of a socket pair)."""
        self.detach()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_unix_connection(asyncio.Protocol, sock=sock)
        self._transport = transport

    def detach(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    async def publish(self, job_ids: Sequence[UUID]) -> None:
        transport = self._transport
        if not job_ids:
            return
        if transport is None or transport.is_closing():
            self.dropped += len(job_ids)
            return
        if transport.get_write_buffer_size() > MAX_BUFFERED_BYTES:
            self.dropped += len(job_ids)
            log.warning("worker process not reading: %d job ids left to the sweeper", len(job_ids))
            return
        transport.write(b"".join(job_id.bytes for job_id in job_ids))

    async def consume(self, max_items: int, wait_seconds: float) -> list[UUID]:
        raise NotImplementedError("the API process publishes; its worker process consumes")

    async def depth(self) -> int:
        """Ids not yet handed to the socket (those in the kernel's buffer are not counted)."""
        transport = self._transport
        return 0 if transport is None else transport.get_write_buffer_size() // ID_BYTES

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self.detach()


class PipeReceiver(MemoryQueue):
    """The worker process's side: an in-process queue fed from the socket by a reader task.

    The worker's own publishes (ids handed back, the sweeper's) go straight to the deque.
    :attr:`closed` is set when the API process closes its end (it stopped or died).
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self._reader: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.closed = asyncio.Event()

    async def open(self) -> None:
        reader, writer = await asyncio.open_unix_connection(sock=self._sock)
        self._writer = writer
        self._reader = asyncio.create_task(self._read(reader), name="pipe-queue-reader")

    async def _read(self, reader: asyncio.StreamReader) -> None:
        pending = b""
        try:
            while chunk := await reader.read(READ_BYTES):
                data = pending + chunk
                whole = len(data) - len(data) % ID_BYTES
                pending = data[whole:]
                await self.publish(
                    [UUID(bytes=data[i : i + ID_BYTES]) for i in range(0, whole, ID_BYTES)]
                )
        except OSError as exc:
            log.warning("job id socket failed: %s", exc)
        finally:
            self.closed.set()

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        if self._writer is not None:
            self._writer.close()
        await super().close()
