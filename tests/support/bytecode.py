"""Bytecode written once, by the process that starts the suite, for the processes that run it.

The suite's test processes (pytest-xdist) each import every test module to collect the suite, and
pytest rewrites each module's ``assert`` statements first (parse, rewrite, compile: about 4.5 s of
CPU per process for this suite). pytest keeps the result beside the module, but writes it only
where bytecode may be written: where ``PYTHONDONTWRITEBYTECODE`` is set, as on CI's machines,
every process rewrites every module on every run. A pyc pytest finds is read whether or not it
may write one, so the controller writes them here before any test process starts.

This uses pytest's own rewriting functions (pinned in pyproject.toml), so the pycs are exactly
what pytest would write, checked by the source's hash when read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from _pytest.assertion import rewrite
from _pytest.pathlib import fnmatch_ex


def rewritten_modules(config: pytest.Config, folder: Path) -> list[Path]:
    """The modules under ``folder`` that pytest rewrites when it imports them: the conftest
    files and the test files (``python_files``)."""
    patterns = config.getini("python_files")
    return [
        path
        for path in sorted(folder.rglob("*.py"))
        if path.name == "conftest.py" or any(fnmatch_ex(p, path) for p in patterns)
    ]


def already_rewritten(config: pytest.Config) -> list[Path]:
    """The modules this process has rewritten so far: the plugins' (pytest rewrites every module
    of a plugin's distribution) and the conftest files it loaded."""
    for hook in _rewriting_hooks(config):
        return [Path(path) for path in hook._rewritten_names.values()]
    return []


def write_rewritten(config: pytest.Config, modules: Iterable[Path]) -> int:
    """Write pytest's rewritten pyc of each module that has none up to date; how many written.
    Nothing when assertions are not rewritten (``--assert=plain``)."""
    state = config.stash.get(rewrite.assertstate_key, None)
    if state is None or not list(_rewriting_hooks(config)):
        return 0
    written = 0
    for module in modules:
        pyc = rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(module, pyc) is not None or not rewrite.try_makedirs(pyc.parent):
            continue
        source_hash, code = rewrite._rewrite_test(module, config)
        written += rewrite._write_pyc(state, code, source_hash, pyc)
    return written


def _rewriting_hooks(config: pytest.Config) -> Iterable[rewrite.AssertionRewritingHook]:
    state = config.stash.get(rewrite.assertstate_key, None)
    hook = getattr(state, "hook", None)
    if isinstance(hook, rewrite.AssertionRewritingHook):
        yield hook
