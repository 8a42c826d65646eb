"""The browser's plumbing that needs no browser: /proc reading, process groups, availability."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from taskcrawler.browser import RenderOptions, processes, render_availability
from taskcrawler.browser.renderer import png_size
from taskcrawler.settings import Settings
from tests.support.target import PNG_1X1


def settings(**overrides: object) -> Settings:
    return Settings(_env_file=None, **overrides)  # type: ignore[arg-type]


def test_a_process_group_is_found_measured_and_killed() -> None:
    marker = f"probe-{os.getpid()}"
    leader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "time.sleep(60)",
        ],
        start_new_session=True,
        env={**os.environ, "TC_PROBE": marker},
    )
    try:
        for _ in range(100):
            members = processes.group_members(leader.pid)
            if len(members) == 2:
                break
            time.sleep(0.05)
        assert {m.pgid for m in members} == {leader.pid} and len(members) == 2
        assert processes.resident_bytes(members) > 0
        assert sorted(processes.carrying_variable("TC_PROBE", marker)) == sorted(
            m.pid for m in members
        )
        processes.kill_group(leader.pid)
        leader.wait(timeout=10)
        for _ in range(200):  # the grandchild is reaped by whoever adopted it
            if not processes.carrying_variable("TC_PROBE", marker):
                break
            time.sleep(0.05)
        assert processes.carrying_variable("TC_PROBE", marker) == []
    finally:
        processes.kill_group(leader.pid)
        leader.wait(timeout=10)


def test_read_process_of_a_missing_pid_is_none() -> None:
    assert processes.read_process(2**22 + 1) is None
    me = processes.read_process(os.getpid())
    assert me is not None and me.pid == os.getpid() and me.rss_bytes > 0


def test_availability_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_executable = tmp_path / "chromium"
    not_executable.write_text("#!/bin/sh\n")
    missing = render_availability(settings(browser=str(not_executable)))
    assert not missing.available and str(not_executable) in missing.reason

    not_executable.chmod(0o755)
    found = render_availability(settings(browser=str(not_executable)))
    assert found.available and found.executable == str(not_executable)

    monkeypatch.setenv("PATH", str(tmp_path))
    assert render_availability(settings()).executable == str(not_executable)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    nowhere = render_availability(settings())
    assert not nowhere.available and "apt-get install chromium" in nowhere.reason


@pytest.mark.parametrize(
    "options",
    [
        {"wait_until": "idle"},
        {"wait_seconds": -1},
        {"wait_seconds": 61},
        {"block_resources": frozenset({"script"})},
        {"viewport_width": 10},
        {"viewport_height": 5000},
        {"wait_for_selector": ""},
        {"wait_for_selector": "div["},
    ],
)
def test_bad_render_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"must|may hold|not a CSS"):
        RenderOptions(**options)  # type: ignore[arg-type]


def test_png_size_reads_the_header() -> None:
    assert png_size(PNG_1X1) == (1, 1)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a" + b"\0" * 30)
