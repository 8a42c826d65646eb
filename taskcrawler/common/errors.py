from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import wraps
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

Translator = Callable[[Exception], Exception | None]


def translate_errors(
    translate: Translator,
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Decorate a coroutine function so that driver exceptions become domain ones.

    ``translate`` returns the exception to raise instead, or None to let the original through.
    Callers then handle one type (e.g. answer 503, or back off) whatever the driver raised.
    """

    def decorate(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        @wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await fn(*args, **kwargs)
            except Exception as exc:
                replacement = translate(exc)
                if replacement is None:
                    raise
                raise replacement from exc

        return wrapper

    return decorate
