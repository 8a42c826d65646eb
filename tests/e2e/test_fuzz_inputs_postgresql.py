"""The hostile-values fuzz of tests/e2e/test_fuzz_inputs.py on PostgreSQL, in a file of its own:
the suite's processes take whole files, so the two long runs go to different processes."""

from __future__ import annotations

import pytest

from tests.e2e.test_fuzz_inputs import every_input_surface_survives_hostile_values


@pytest.mark.timeout(900)
async def test_every_input_surface_survives_hostile_values_on_postgresql(pg_url: str) -> None:
    await every_input_surface_survives_hostile_values(pg_url)
