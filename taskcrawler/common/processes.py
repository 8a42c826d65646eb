"""A small pool of child processes that run calls under a deadline, and kill what overruns.

``concurrent.futures.ProcessPoolExecutor`` cannot stop one call: killing its worker breaks the
whole pool, and every call in flight with it. Here each child runs one call at a time over its
own pipes, so a call that overruns its deadline costs only its own child, which is killed and
replaced on the next call, while the other children go on.

A call is ``(function, args, kwargs)``, pickled: the function must be importable by name (a
module-level function, or a ``functools.partial`` of one). Children are started with this
interpreter and the parent's ``sys.path``, lazily, and live until :meth:`ProcessPool.aclose`;
they import the ``preload`` modules before their first call, so that the deadline of a call is
spent on the call, not on imports. A child that holds more than ``recycle_above_mb`` of memory
after a call (Python keeps what a big call allocated) is ended, and replaced when needed. With
``memory_limit_mb``, a child's address space may grow at most that much past what it holds once
its imports are done (``RLIMIT_AS``): a call that would take more gets a ``MemoryError`` (or,
in C code that cannot handle one, its child dies), and the machine's memory stays with the
others, where a few kilobytes of hostile document could otherwise ask gigabytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import pickle
import resource
import signal
import struct
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any, Protocol, TypeVar

T = TypeVar("T")

_LENGTH = struct.Struct(">Q")  # every message is a length, then that many bytes of pickle
#: A child that has not answered its first message in this long is taken for broken.
START_TIMEOUT_SECONDS = 60.0
#: After parsing a 7 MB page of 200,000 links a child kept 240-270 MB; a fresh one has about 60.
DEFAULT_RECYCLE_ABOVE_MB = 200
_CHILD_MAIN = "from taskcrawler.common.processes import serve_calls; serve_calls()"


class CallTimeout(Exception):
    """A call overran its deadline; the process that ran it was killed."""


class ChildDied(Exception):
    """The child process ended before it answered (a crash, or the kernel's OOM killer)."""


class _Child:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def call(self, payload: bytes) -> bytes:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None, "started with a pipe"
        assert stdout is not None, "started with a pipe"
        try:
            stdin.write(_LENGTH.pack(len(payload)))
            stdin.write(payload)  # not concatenated: a page may be 10 MB, copied on the loop
            await stdin.drain()
        except ConnectionError as exc:  # its end of the pipe is closed: it is gone
            code = await self.process.wait()
            raise ChildDied(f"the child process ended (exit code {code})") from exc
        try:
            (length,) = _LENGTH.unpack(await stdout.readexactly(_LENGTH.size))
            return await stdout.readexactly(length)
        except asyncio.IncompleteReadError as exc:
            code = await self.process.wait()
            raise ChildDied(f"the child process ended (exit code {code})") from exc

    def alive(self) -> bool:
        """Whether the child may still answer: it has not ended, nor closed its output."""
        stdout = self.process.stdout
        return self.process.returncode is None and not (stdout is not None and stdout.at_eof())

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        await self.process.wait()

    async def close(self, grace: float) -> None:
        """End of input makes the child exit once its current call is done."""
        stdin = self.process.stdin
        if stdin is not None:
            stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            await self.kill()


class CallRunner(Protocol):
    """Where CPU-bound calls run off the event loop: :class:`ProcessPool`, or
    :class:`InThreads`. ``size``: how many calls it runs at once."""

    size: int

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...


class InThreads:
    """:class:`ProcessPool`'s interface with each call in a thread of this process, without a
    deadline: for a command in the foreground (``taskcrawler map``), where no other request
    waits for the event loop and no process is worth starting."""

    size = 1

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)


class ProcessPool:
    """Up to ``size`` children; a call waits for a free one, then has ``timeout`` seconds."""

    def __init__(
        self,
        size: int,
        timeout: float,
        preload: Sequence[str] = (),
        recycle_above_mb: float = DEFAULT_RECYCLE_ABOVE_MB,
        memory_limit_mb: float | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a process pool needs at least one process")
        self.size = size
        self.timeout = timeout
        self.preload = tuple(preload)
        self.recycle_above_mb = recycle_above_mb
        self.memory_limit_mb = memory_limit_mb
        self._free = asyncio.Semaphore(size)
        self._idle: list[_Child] = []
        self._children: set[_Child] = set()
        self.started = 0  # children started so far, replacements included
        self.killed = 0  # children killed for overrunning or being abandoned
        self.recycled = 0  # children ended for the memory they held

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a child process; its exception is raised here.

        :class:`CallTimeout` past the deadline, :class:`ChildDied` if the child died. A call
        cancelled mid-way kills its child too: its answer would arrive for nobody.
        """
        payload = pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        async with self._free:
            child = await self._idle_child() or await self._start()
            try:
                async with asyncio.timeout(self.timeout):
                    answer = await child.call(payload)
                # An answer that does not load (an exception whose class cannot be built from
                # its args) ends its child below, which would otherwise live on, never used.
                ok, value, resident_mb = pickle.loads(answer)
            except TimeoutError:
                await self._discard(child)
                raise CallTimeout(f"no answer within {self.timeout:g}s") from None
            except BaseException:
                await self._discard(child)
                raise
            if resident_mb > self.recycle_above_mb:
                self._children.discard(child)
                self.recycled += 1
                await child.close(grace=5.0)
            else:
                self._idle.append(child)
        if not ok:
            raise value
        result: T = value
        return result

    async def _idle_child(self) -> _Child | None:
        """An idle child still alive, if any. One that ended while idle (the kernel's OOM
        killer picks the biggest process, and a parse child may be it) is dropped here: the
        next call must not fail for a death that was not its doing."""
        while self._idle:
            child = self._idle.pop()
            if child.alive():
                return child
            self._children.discard(child)
            await child.kill()  # reaped; not counted: it was not ours to kill
        return None

    async def _start(self) -> _Child:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _CHILD_MAIN,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        child = _Child(process)
        self._children.add(child)
        self.started += 1
        try:
            # The parent's import path, so that the child finds what the calls name.
            async with asyncio.timeout(START_TIMEOUT_SECONDS):
                start = (sys.path, self.preload, self.memory_limit_mb)
                await child.call(pickle.dumps(start))
        except BaseException:
            await self._discard(child)
            raise
        return child

    async def _discard(self, child: _Child) -> None:
        self._children.discard(child)
        self.killed += 1
        await child.kill()

    async def aclose(self, grace: float = 2.0) -> None:
        children, self._children = list(self._children), set()
        self._idle.clear()
        await asyncio.gather(*(child.close(grace) for child in children))


# --- the child's side -----------------------------------------------------------------------


def _read(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None  # the parent closed our input (or died): time to go
    (length,) = _LENGTH.unpack(header)
    return stream.read(length)


def _write(stream: IO[bytes], ok: bool, value: object) -> None:
    """An answer: whether the call returned, its result or exception, and our resident MB."""
    try:
        data = pickle.dumps((ok, value, _resident_mb()), protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:  # the answer is more than the memory limit leaves room for
        data = pickle.dumps((False, MemoryError(), 0.0))
    except Exception as exc:  # an exception or result that does not pickle
        data = pickle.dumps((False, RuntimeError(f"unpicklable answer: {exc!r}"), 0.0))
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _resident_mb() -> float:
    try:
        with open("/proc/self/statm", "rb") as statm:  # Linux; elsewhere never recycled
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _limit_address_space(extra_mb: float) -> None:
    """Let this process's address space grow by ``extra_mb`` at most from now on: counted from
    what the interpreter and its imports already map, which differs between machines."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return  # not Linux: no limit, as with recycling
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = mapped + int(extra_mb * 2**20)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def serve_calls() -> None:
    """The child's loop: answer calls read from stdin on the original stdout, until EOF."""
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Answers go to a private copy of stdout; anything the calls print goes to stderr.
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    calls = sys.stdin.buffer
    first = _read(calls)
    if first is None:
        return
    sys.path[:], preload, memory_limit_mb = pickle.loads(first)
    for module in preload:
        importlib.import_module(module)
    if memory_limit_mb is not None:
        _limit_address_space(memory_limit_mb)
    _write(answers, True, None)
    while (message := _read(calls)) is not None:
        try:
            fn, args, kwargs = pickle.loads(message)
            result = fn(*args, **kwargs)
        except Exception as exc:
            _write(answers, False, exc)
        else:
            _write(answers, True, result)
