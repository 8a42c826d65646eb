"""``blockAds``: a rendered page's requests to ad and tracker servers are refused, by EasyList
and EasyPrivacy, the lists uBlock Origin and Adblock Plus use, matched by Brave's adblock-rust
engine (the ``adblock`` package).

The lists are not ours and not fetched at run time: they are those Debian ships, and keeps up to
date, in uBlock Origin's package (``apt-get install webext-ublock-origin-chromium``, beside
``chromium``; the Docker image has it), or the files ``TASKCRAWLER_AD_FILTER_LISTS`` names. Where
neither is there, ads are not blocked and the render's result says why.

Compiling the two lists takes about 2.5 s of CPU (measured here), so it is done once per worker
process, in a thread, at the first render that asks for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Where Debian's uBlock Origin keeps EasyList and EasyPrivacy.
DEBIAN_LISTS = (
    Path("/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt"),
    Path(
        "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easyprivacy.txt"
    ),
)
#: A list larger than this is not read (a misconfigured path must not exhaust memory).
MAX_LIST_BYTES = 32 * 1024 * 1024


class AdBlocker:
    """Matches request URLs against filter lists; loaded on first use."""

    def __init__(self, lists: Sequence[Path] = DEBIAN_LISTS) -> None:
        self.lists = tuple(lists)
        self._engine: Any = None
        self._loading: asyncio.Task[Any] | None = None
        #: Why ads cannot be blocked here, once known (None: they can, or not tried yet).
        self.unavailable: str | None = None

    async def ready(self) -> bool:
        """Whether ads can be blocked: the lists compiled (once), else :attr:`unavailable`."""
        if self._engine is not None:
            return True
        if self.unavailable is not None:
            return False
        if self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(self._compile))
        try:
            self._engine = await asyncio.shield(self._loading)
        except (OSError, ImportError, ValueError) as exc:
            self.unavailable = str(exc)
            log.warning("blockAds unavailable: %s", exc)
            return False
        return True

    def blocks(self, url: str, source_url: str, resource_type: str) -> bool:
        """Whether the lists refuse ``url``, requested by the page at ``source_url``."""
        if self._engine is None:
            return False
        result = self._engine.check_network_urls(url, source_url, resource_type)
        return bool(result.matched) and not result.exception

    def _compile(self) -> Any:
        try:
            import adblock
        except ImportError:
            raise ImportError("the adblock package is not installed") from None
        rules = []
        for path in self.lists:
            if not path.is_file():
                raise OSError(
                    f"no filter list at {path} (apt-get install webext-ublock-origin-chromium)"
                )
            if path.stat().st_size > MAX_LIST_BYTES:
                raise ValueError(f"{path} is larger than {MAX_LIST_BYTES:,} bytes")
            rules.append(path.read_text(encoding="utf-8", errors="replace"))
        filters = adblock.FilterSet()
        for text in rules:
            filters.add_filter_list(text)
        return adblock.Engine(filters)


__all__ = ["DEBIAN_LISTS", "AdBlocker"]
