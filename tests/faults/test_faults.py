"""No job is lost or processed twice because a process, Redis or PostgreSQL failed.

Real ``taskcrawler`` processes, real PostgreSQL and Redis (our own instances where a test stops
one). Every test ends with each job COMPLETED and the target hit once per job, plus only the
re-runs the database accounts for. ``python -m bench.faults`` runs the same scenarios bigger.
"""

from __future__ import annotations

import pytest

from tests.faults import scenarios
from tests.faults.kit import Deployment, Outcome
from tests.support.services import PostgresProcess, RedisProcess

# A scenario waits up to 60 s at each of its steps (a quarter done, all final, ...), so on a
# loaded machine a passing one may outlast the default deadline.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def assert_clean(outcome: Outcome, *, repeats_allowed: bool = True) -> None:
    """Every job COMPLETED; any repeated fetch is one the database accounts for."""
    assert outcome.lost == 0, outcome
    assert outcome.failed == 0, outcome
    assert outcome.completed == outcome.jobs, outcome
    assert outcome.unexplained == 0, outcome
    if not repeats_allowed:
        assert outcome.repeated == 0, outcome


async def test_kill9_worker_mid_batch(production: Deployment) -> None:
    outcome = await scenarios.kill9_worker(production, jobs=150, delay=0.3, concurrency=25)
    assert_clean(outcome)


async def test_kill9_worker_of_two_processes_mid_batch(production: Deployment) -> None:
    outcome = await scenarios.kill9_worker(
        # Pages of 1 s: a batch stays in flight well past the poll that sees it, on a slow host.
        production,
        jobs=150,
        delay=1.0,
        concurrency=12,
        processes=2,
    )
    assert_clean(outcome)


async def test_kill9_one_of_a_workers_processes(production: Deployment) -> None:
    outcome = await scenarios.kill9_one_worker_process(
        production, jobs=150, delay=0.3, concurrency=12
    )
    assert_clean(outcome)


async def test_worker_processes_stop_when_their_parent_is_killed(production: Deployment) -> None:
    outcome = await scenarios.worker_parent_killed(production, jobs=100, delay=0.3, concurrency=12)
    # They stopped gracefully: what they held was finished or handed back, never run twice.
    assert_clean(outcome, repeats_allowed=False)


async def test_redis_flushall_and_restart(
    with_own_redis: Deployment, own_redis: RedisProcess
) -> None:
    outcome = await scenarios.redis_flush_and_restart(
        with_own_redis, own_redis, jobs=150, delay=0.1, concurrency=10
    )
    assert_clean(outcome, repeats_allowed=False)


async def test_redis_down_api_accepts_jobs(
    with_own_redis: Deployment, own_redis: RedisProcess
) -> None:
    outcome = await scenarios.redis_down_accepts(with_own_redis, own_redis, jobs=20)
    assert_clean(outcome, repeats_allowed=False)


async def test_postgres_outage(
    with_own_postgres: Deployment, own_postgres: PostgresProcess
) -> None:
    # The lease outlives the outage: a worker that is only waiting for the database keeps its
    # jobs, so nothing runs twice. The redispatch delay is the default's: ids a worker took from
    # the queue while it could not claim them must not wait for the sweeper.
    with_own_postgres.settings |= {"lease_seconds": 10, "redispatch_seconds": 30}
    outcome = await scenarios.postgres_outage(
        with_own_postgres,
        own_postgres,
        jobs=100,
        delay=0.2,
        concurrency=10,
        outage=3.0,
        recover_within=15,
    )
    assert_clean(outcome, repeats_allowed=False)


async def test_worker_started_while_postgres_is_down(
    with_own_postgres: Deployment, own_postgres: PostgresProcess
) -> None:
    # The default redispatch delay: without the worker putting back what it could not claim,
    # those jobs would wait 30 s for the sweeper.
    with_own_postgres.settings["redispatch_seconds"] = 30
    # Leases long enough to outlast the pool's reconnection after the restart: a lease that
    # ran out meanwhile would have its job fetched again, which this scenario is not about.
    with_own_postgres.settings["lease_seconds"] = 15
    outcome = await scenarios.postgres_down_at_worker_start(
        with_own_postgres, own_postgres, jobs=50, outage=2.0, recover_within=15
    )
    assert_clean(outcome, repeats_allowed=False)


async def test_sigterm_rolling_restart(production: Deployment) -> None:
    outcome = await scenarios.sigterm_rolling(production, jobs=100, delay=0.3, concurrency=10)
    assert_clean(outcome, repeats_allowed=False)


async def test_sigterm_hands_back_jobs_that_outlast_grace(production: Deployment) -> None:
    outcome = await scenarios.sigterm_hand_back(production, jobs=4, delay=6.0, grace=0.5)
    assert_clean(outcome)


async def test_duplicate_delivery(production: Deployment) -> None:
    outcome = await scenarios.duplicate_delivery(production, jobs=100, copies=3, workers=2)
    assert_clean(outcome, repeats_allowed=False)


async def test_embedded_serve_killed_and_restarted(embedded: Deployment) -> None:
    outcome = await scenarios.embedded_restart(embedded, jobs=100, delay=0.5, concurrency=10)
    assert_clean(outcome)
