from __future__ import annotations

import random

#: Doublings of the base past which the cap is taken as reached (2.0**1024 overflows a float).
MAX_EXPONENT = 1000


def backoff_delay(
    retry: int, *, base: float, cap: float, rng: random.Random | None = None
) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first retry).

    Full jitter (uniform on ``[0, min(cap, base * 2**(retry-1))]``) spreads the retries of many jobs
    that failed together, so a recovering host is not hit by a synchronized wave.
    """
    exponent = max(retry - 1, 0)
    ceiling = cap if exponent > MAX_EXPONENT else min(cap, base * (2.0**exponent))
    return (rng or random).uniform(0.0, ceiling)
