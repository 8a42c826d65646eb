import random

import pytest

from taskcrawler.domain import ErrorCode, FetchError, backoff_delay


@pytest.mark.parametrize("retry", [1, 2, 3, 4, 8, 20])
def test_full_jitter_stays_within_the_exponential_ceiling(retry: int) -> None:
    rng = random.Random(retry)
    ceiling = min(60.0, 1.0 * 2 ** (retry - 1))
    delays = [backoff_delay(retry, base=1.0, cap=60.0, rng=rng) for _ in range(500)]
    assert all(0.0 <= d <= ceiling for d in delays)
    # Jitter really spreads the delays over the whole range, not a fixed value.
    assert max(delays) > 0.8 * ceiling
    assert min(delays) < 0.2 * ceiling


def test_cap_bounds_late_retries() -> None:
    rng = random.Random(1)
    assert all(backoff_delay(50, base=1.0, cap=5.0, rng=rng) <= 5.0 for _ in range(100))


@pytest.mark.parametrize(
    ("status", "code", "transient"),
    [
        (404, "http_404", False),
        (403, "http_403", False),
        (410, "http_410", False),
        (429, ErrorCode.HTTP_429, True),
        (500, ErrorCode.HTTP_5XX, True),
        (503, ErrorCode.HTTP_5XX, True),
    ],
)
def test_status_errors_are_typed(status: int, code: str, transient: bool) -> None:
    error = FetchError.for_status(status, "Reason", retry_after=3.0)
    assert error.code == code
    assert error.transient is transient
    assert error.http_status == status
    assert error.log_line.startswith(f"{code}: HTTP {status}")


@pytest.mark.parametrize("retry", [1001, 1026, 10**6])
def test_a_retry_past_any_doubling_waits_up_to_the_cap(retry: int) -> None:
    # An operator's max attempts of 1,100 reached retry 1,025, where 2.0**1024 overflowed.
    delays = [backoff_delay(retry, base=5.0, cap=60.0, rng=random.Random(n)) for n in range(20)]
    assert all(0.0 <= delay <= 60.0 for delay in delays)
    assert max(delays) > 30.0
