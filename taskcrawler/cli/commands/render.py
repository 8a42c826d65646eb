"""How the client commands print jobs: rich tables for people, JSON for scripts."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson
from rich import box
from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from taskcrawler.cli.client import Job
from taskcrawler.cli.ids import short_ids

STYLES = {
    "PENDING": "dim",
    "PROCESSING": "yellow",
    "COMPLETED": "green",
    "FAILED": "bold red",
    "CANCELLED": "magenta",
}


#: Width of tables written to a pipe or file (a terminal's own width is used on a terminal).
PIPE_WIDTH = 200


#: Control characters shown as symbols (ESC as U+241B, C1 ones as U+FFFD), never written to
#: the terminal: what is printed comes from the web (a page's title or text, an error), and an
#: escape sequence in it could clear the screen, set the window's title or the clipboard.
_VISIBLE = (
    {code: 0x2400 + code for code in range(0x20) if chr(code) not in "\n\t"}
    | {0x7F: 0x2421}
    | {code: 0xFFFD for code in range(0x80, 0xA0)}
)


class _Printable:
    """A renderable as rendered, its text's control characters made visible (rich's own
    control segments, a live display's cursor moves, are kept)."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control:
                yield segment
            else:
                yield Segment(segment.text.translate(_VISIBLE), segment.style)


class _PrintableOnly(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Printable(renderable) for renderable in renderables]


def _console(**options: Any) -> Console:
    console = Console(highlight=False, **options)
    console.push_render_hook(_PrintableOnly())
    return console


def out() -> Console:
    """Results: standard output. A pipe gets wide tables, not rich's guess of 80 columns."""
    console = _console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = _console(width=PIPE_WIDTH)
    return console


def err() -> Console:
    """Messages and progress: standard error, so standard output stays clean for pipes."""
    return _console(stderr=True)


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


def jobs_table(
    jobs: Iterable[Job], *, title: str | None = None, ids: bool = True, width: int | None = None
) -> Table:
    """One line a job, fit to ``width`` columns (the console's; 80 and up): a short id (the
    start of the id that tells it from the others shown), the status, then the URL and the title
    or error, cut with an ellipsis, never wrapped. ``--json`` prints everything whole."""
    jobs = list(jobs)
    shown = short_ids(str(job["id"]) for job in jobs) if ids else {}
    rows: list[list[Text]] = []
    for job in jobs:
        took = seconds(job.get("created_at"), job.get("finished_at"))
        row = [Text(shown[str(job["id"])])] if ids else []
        row += [
            status_text(job["status"]),
            Text(str(job["url"])),
            outcome(job),
            Text(str(job.get("retry_count", 0))),
            Text(duration(took)),
        ]
        rows.append(row)
    headers = (["ID"] if ids else []) + ["STATUS", "URL", "TITLE / ERROR", "TRIES", "TOOK"]
    flexible = {"URL": 3, "TITLE / ERROR": 2}  # their shares of what the others leave
    widths = fit_widths(headers, rows, flexible, width or out().width)
    url_column = headers.index("URL")
    for row in rows:
        row[url_column] = Text(short_url(row[url_column].plain, widths[url_column]))
    return fitted_table(headers, rows, widths, right=("TRIES", "TOOK"), title=title)


def fitted_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Text]],
    widths: Sequence[int],
    *,
    right: Sequence[str] = (),
    title: str | None = None,
) -> Table:
    """A table of ``rows`` whose columns have ``widths`` (see :func:`fit_widths`): one line a
    row, what does not fit cut with an ellipsis, the ID column dim, the ``right`` ones aligned
    right."""
    table = compact_table(title)
    for header, column_width in zip(headers, widths, strict=True):
        table.add_column(
            header,
            no_wrap=True,
            overflow="ellipsis",
            width=column_width,
            style="dim" if header == "ID" else "",
            justify="right" if header in right else "left",
        )
    for row in rows:
        table.add_row(*row)
    return table


def fit_widths(
    headers: Sequence[str], rows: Sequence[Sequence[Text]], flexible: dict[str, int], width: int
) -> list[int]:
    """Column widths that fit ``width``: every column as wide as its widest cell, but the
    ``flexible`` ones (header -> share) split what the others leave when that is too little."""
    needs = [
        max([len(header), *(max((len(line) for line in row[i].plain.split("\n")), default=0)
                             for row in rows)])
        for i, header in enumerate(headers)
    ]  # fmt: skip
    fixed = sum(need for header, need in zip(headers, needs, strict=True) if header not in flexible)
    room = max(width - fixed - GAP * (len(headers) - 1), MIN_FLEXIBLE * len(flexible))
    wanted = {h: n for h, n in zip(headers, needs, strict=True) if h in flexible}
    given = dict(wanted)
    while sum(given.values()) > room:
        # Shrink the column furthest over its share of the room, one character at a time
        # (a few hundred steps at most).
        total = sum(flexible.values())
        over = max(given, key=lambda h: given[h] - room * flexible[h] / total)
        if given[over] <= MIN_FLEXIBLE:
            break
        given[over] -= 1
    return [given.get(header, need) for header, need in zip(headers, needs, strict=True)]


#: Spaces between two columns of a compact table; the fewest characters a cut column keeps.
GAP = 2
MIN_FLEXIBLE = 10


def short_url(url: str, width: int) -> str:
    """``url`` in ``width`` characters: whole when it fits; else without its scheme, and cut in
    the middle, so that both the host and the end of the path (where URLs of one site differ)
    stay readable."""
    if len(url) <= width:
        return url
    url = url.split("://", 1)[-1]
    if len(url) <= width or width < 2:
        return url[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return f"{url[:head]}…{url[-tail:]}"


def compact_table(title: str | None = None) -> Table:
    """A table without vertical rules: at 80 columns the text gets the room borders would."""
    return Table(
        title=title,
        title_justify="left",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
