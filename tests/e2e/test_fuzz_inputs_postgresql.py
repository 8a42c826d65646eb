"""The hostile-values fuzz of tests/e2e/test_fuzz_inputs.py on PostgreSQL, in parts that the
suite's processes share (tests/support/scheduling.py)."""

from __future__ import annotations

import pytest

from tests.e2e.test_fuzz_inputs import every_input_surface_survives_hostile_values, shards


@pytest.mark.timeout(900)
@shards
async def test_every_input_surface_survives_hostile_values_on_postgresql(
    pg_url: str, shard: int
) -> None:
    await every_input_surface_survives_hostile_values(pg_url, shard)
