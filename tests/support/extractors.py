"""Extractors for the parser tests, in a module of their own: a parser process imports it, and
it imports nothing heavier than the extractor itself."""

from __future__ import annotations

import os
import time

from taskcrawler.extract import Extraction, extract


def pid_title(body: bytes, **kwargs: object) -> Extraction:
    """The page's title, followed by "|" and the id of the process that parsed it."""
    extraction = extract(body, **kwargs)  # type: ignore[arg-type]
    extraction.title = f"{extraction.title}|{os.getpid()}"
    return extraction


def allocate(size: int) -> int:
    """Take ``size`` bytes, and say how many were taken."""
    return len(bytearray(size))


def hostile(body: bytes, **kwargs: object) -> Extraction:
    """Pages that hang, crash or fail the extractor, as a lexbor bug or a pathology might."""
    if body.startswith(b"hang"):
        time.sleep(3600)
    if body.startswith(b"crash"):
        os._exit(3)
    if body.startswith(b"fail"):
        raise ValueError("no such page")
    if body.startswith(b"hog"):  # as a few kilobytes of PDF that expand to gigabytes
        held = bytearray(2 * 2**30)
        held[-1] = 1

    return pid_title(body, **kwargs)


class TwoPartError(Exception):
    """An exception that pickles but does not unpickle (its ``__init__`` wants two arguments,
    its ``args`` hold one), as some libraries' exceptions do."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def unloadable_error() -> None:
    raise TwoPartError("broken", 7)
