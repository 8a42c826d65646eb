"""A country's time zone for the browser (``location.country``), from the system's tz database
(``zone1970.tab``: the zones of each country, its most populous first)."""

from __future__ import annotations

import functools
import zoneinfo
from pathlib import Path

_TABLES = ("zone1970.tab", "zone.tab")


@functools.cache
def _zones() -> dict[str, str]:
    """Country code -> its first zone, from the first table found on the tz path."""
    for folder in zoneinfo.TZPATH:
        for name in _TABLES:
            path = Path(folder) / name
            if path.is_file():
                return _read(path)
    return {}


def _read(path: Path) -> dict[str, str]:
    """A zone listed first for its country wins over one it shares with others
    (``CH,DE,LI Europe/Zurich`` comes before ``DE Europe/Berlin``)."""
    own: dict[str, str] = {}
    shared: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) >= 3:
            countries = [country.upper() for country in fields[0].split(",")]
            own.setdefault(countries[0], fields[2])
            for country in countries[1:]:
                shared.setdefault(country, fields[2])
    return {**shared, **own}


def timezone_for(country: str | None) -> str | None:
    """The time zone of ``country`` (ISO 3166-1 alpha-2), or None when unknown."""
    if not country:
        return None
    return _zones().get(country.upper())


__all__ = ["timezone_for"]
