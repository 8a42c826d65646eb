"""How the API fuzzers run Hypothesis: reproducible, no deadline, no memory between runs."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings


def fuzz_settings(max_examples: int) -> settings:
    """Derandomized (the same cases on every run and machine, so a failure reproduces), no
    example database, no deadline (the machine is shared), every health check off (requests
    are slow for Hypothesis, and big values are the point)."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
