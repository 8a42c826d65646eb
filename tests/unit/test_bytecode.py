"""The controller's rewritten pycs (tests/support/bytecode.py) are the ones pytest reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests.support.bytecode import rewritten_modules, write_rewritten


def test_a_test_module_gets_the_pyc_pytest_reads(
    pytestconfig: pytest.Config, tmp_path: Path
) -> None:
    (tmp_path / "test_sample.py").write_text("def test_it():\n    assert 1 + 1 == 3\n")
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    modules = rewritten_modules(pytestconfig, tmp_path)
    assert [m.name for m in modules] == ["conftest.py", "test_sample.py"]

    assert write_rewritten(pytestconfig, modules) == 2
    pyc = tmp_path / "__pycache__" / ("test_sample" + rewrite.PYC_TAIL)
    code = rewrite._read_pyc(tmp_path / "test_sample.py", pyc)
    assert code is not None
    namespace: dict[str, object] = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match=r"assert \(1 \+ 1\) == 3"):
        namespace["test_it"]()  # type: ignore[operator]
    # Up to date: not written again; a changed source is.
    assert write_rewritten(pytestconfig, modules) == 0
    (tmp_path / "test_sample.py").write_text("def test_it():\n    assert True\n")
    assert write_rewritten(pytestconfig, modules) == 1
