"""How the client commands print jobs: rich tables for people, JSON for scripts."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from taskcrawler.cli.client import Job

STYLES = {
    "PENDING": "dim",
    "PROCESSING": "yellow",
    "COMPLETED": "green",
    "FAILED": "bold red",
    "CANCELLED": "magenta",
}


#: Width of tables written to a pipe or file (a terminal's own width is used on a terminal).
PIPE_WIDTH = 200


def out() -> Console:
    """Results: standard output. A pipe gets wide tables, not rich's guess of 80 columns."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, width=PIPE_WIDTH)
    return console


def err() -> Console:
    """Messages and progress: standard error, so standard output stays clean for pipes."""
    return Console(stderr=True, highlight=False)


def fail(message: str) -> None:
    """One line on stderr, plain when stderr is not a terminal."""
    err().print(Text(f"error: {message}", style="bold red"), soft_wrap=True)


def print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
    sys.stdout.flush()


def status_text(status: str) -> Text:
    return Text(status, style=STYLES.get(status, ""))


def parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def seconds(start: str | None, end: str | None) -> float | None:
    began, ended = parse_time(start), parse_time(end)
    return (ended - began).total_seconds() if began and ended else None


def duration(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    return f"{minutes // 60} h {minutes % 60} min"


def local_time(value: str | None) -> str:
    moment = parse_time(value)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def outcome(job: Job) -> Text:
    """The title of a completed job, the error of a failed one."""
    if job.get("error_log"):
        return Text(str(job["error_log"]), style="red")
    return Text(str(job.get("scraped_title") or ""))


def jobs_table(jobs: Iterable[Job], *, title: str | None = None, ids: bool = True) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold", expand=False)
    if ids:
        table.add_column("ID", no_wrap=True, style="dim")
    table.add_column("STATUS", no_wrap=True)
    table.add_column("URL", overflow="fold", max_width=60)
    table.add_column("TITLE / ERROR", overflow="fold", max_width=60)
    table.add_column("RETRIES", justify="right")
    table.add_column("TOOK", justify="right", no_wrap=True)
    for job in jobs:
        took = seconds(job.get("created_at"), job.get("finished_at"))
        row: list[Text | str] = [str(job["id"])] if ids else []
        row += [
            status_text(job["status"]),
            Text(str(job["url"])),
            outcome(job),
            str(job.get("retry_count", 0)),
            duration(took),
        ]
        table.add_row(*row)
    return table
