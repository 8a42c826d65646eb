"""How every command runs its coroutine: a leaf module, so that the commands need not import
the parser that names them."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop where it is installed (it is on Linux and macOS), else plain asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    result: T = uvloop.run(main)
    return result
