"""How ``make test`` hands the suite to its processes (tests/support/scheduling.py)."""

from __future__ import annotations

from tests.support.processes import REPO_ROOT
from tests.support.scheduling import LAST, LONGEST_FIRST, rank, work_unit


def test_a_test_goes_with_its_file_and_a_shard_alone() -> None:
    assert work_unit("tests/e2e/test_api.py::test_x[embedded]") == "tests/e2e/test_api.py"
    assert work_unit("tests/e2e/test_api.py::Class::test_y") == "tests/e2e/test_api.py"
    shard = "tests/e2e/test_fuzz_inputs.py::test_z[shard-2-of-4]"
    assert work_unit(shard) == shard


def test_units_go_out_by_layer_then_by_size() -> None:
    units = {
        "tests/unit/test_urls.py": 300,
        "tests/unit/test_small.py": 3,
        "tests/docs/test_docs_true.py": 40,
        "tests/e2e/test_api.py": 50,
        "tests/e2e/test_fuzz_inputs.py::test_z[shard-1-of-4]": 1,
        "tests/bench/test_bench_smoke.py": 10,
        "tests/integration/test_crawls.py": 60,
    }
    ordered = sorted(units, key=lambda unit: rank(unit, units[unit]))
    assert ordered == [
        "tests/e2e/test_fuzz_inputs.py::test_z[shard-1-of-4]",
        "tests/bench/test_bench_smoke.py",
        "tests/e2e/test_api.py",
        "tests/integration/test_crawls.py",
        "tests/docs/test_docs_true.py",
        "tests/unit/test_urls.py",
        "tests/unit/test_small.py",
    ]


def test_every_prefix_names_tests_that_exist() -> None:
    """A renamed folder or file would silently lose its place in the order."""
    for prefix in (*LONGEST_FIRST, LAST):
        folder, _, start = prefix.rpartition("/")
        assert any((REPO_ROOT / folder).glob(f"{start}*")), prefix
