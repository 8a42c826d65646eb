from __future__ import annotations

import random

#: Past this the ceiling is the cap for any base worth having; 2.0**1024 raises OverflowError,
#: which the loops that count their failures without end (a worker's during a database outage)
#: would reach after an outage of about an hour.
_MAX_EXPONENT = 1000


def backoff_delay(
    retry: int, *, base: float, cap: float, rng: random.Random | None = None
) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first retry).

    Full jitter (uniform on ``[0, min(cap, base * 2**(retry-1))]``) spreads the retries of many jobs
    that failed together, so a recovering host is not hit by a synchronized wave.
    """
    exponent = min(max(retry - 1, 0), _MAX_EXPONENT)
    ceiling = min(cap, base * (2.0**exponent))
    return (rng or random).uniform(0.0, ceiling)
