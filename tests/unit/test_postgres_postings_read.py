"""How many postings of each query term PostgreSQL's pruned keyword search reads."""

from __future__ import annotations

import pytest

from taskcrawler.storage.postgres import chunks as postgres_chunks
from taskcrawler.storage.postgres.chunks import postings_read


@pytest.fixture(autouse=True)
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_chunks, "POSTINGS_PER_TERM", 10)
    monkeypatch.setattr(postgres_chunks, "POSTINGS_BUDGET", 100)


def test_the_rarest_terms_are_read_in_full_while_they_fit_the_budget() -> None:
    holding = {"common": 500, "rare": 30, "rarer": 5, "middling": 80}
    # rarer 5 + rare 30 fit in 100 (the shorter list read to the cap, which it is under);
    # middling would make 115; common is cut to the cap.
    assert postings_read(list(holding), holding) == [10, 30, 10, 10]


def test_a_query_of_common_terms_only_reads_none_in_full() -> None:
    holding = {"cell": 700, "patient": 400}
    assert postings_read(list(holding), holding) == [10, 10]


def test_a_list_shorter_than_the_cap_is_read_to_the_cap() -> None:
    holding = {"rare": 3}
    assert postings_read(["rare"], holding) == [10]
