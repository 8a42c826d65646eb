"""Run history, without I/O: how a run's content is stored (:class:`RunContent`), and which runs a
retention policy drops (:func:`runs_to_drop`).

A job keeps every run of its page. The content of a run (its Markdown and text) is stored
compressed, and only when it differs from the run before it (:attr:`RunContent.digest`): a 304
or a byte-identical page stores nothing new and names the run whose blob holds its content
(:attr:`RunInfo.content_run`). Retention never drops a run whose blob a kept run reads.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from isal import isal_zlib

#: The first byte of every stored blob: the format's version.
FORMAT_VERSION = 1
#: ISA-L's level 2 of 0-3. On 300 real pages (``python -m bench.monitor_bounds``) their Markdown
#: and text shrank to 0.272 of their size at 430 MB/s; zlib's default to 0.251 at 44 MB/s.
#: Compressed apart, the Markdown and the text took 0.409: hence one blob.
COMPRESSION_LEVEL = 2
#: A stored blob is never inflated beyond this (a corrupt row must not exhaust memory): far more
#: than the Markdown and text of the largest page a fetch accepts.
MAX_CONTENT_BYTES = 256 * 1024 * 1024
#: Runs kept per job unless the deployment sets another (``TASKCRAWLER_RUN_RETENTION_RUNS``).
DEFAULT_RETENTION_RUNS = 100
_LENGTH = struct.Struct("<Q")  # the Markdown's length in bytes, before the Markdown
# Lone surrogates cannot be UTF-8 encoded; what extraction returns is kept exactly either way.
_ERRORS = "surrogatepass"


class CorruptContent(ValueError):
    """A stored blob that is not a run's content (another version, cut short, inflating too
    far)."""


@dataclass(frozen=True, slots=True)
class RunContent:
    """What a run read: its Markdown and its text. Stored as one blob (the two share most of
    their words, so one compressed stream is smaller than two)."""

    markdown: str
    text: str

    def encode(self) -> bytes:
        """The blob to store: a version byte, then the zlib stream of the Markdown's length,
        the Markdown and the text, all UTF-8."""
        markdown = self.markdown.encode("utf-8", _ERRORS)
        frame = _LENGTH.pack(len(markdown)) + markdown + self.text.encode("utf-8", _ERRORS)
        return bytes([FORMAT_VERSION]) + isal_zlib.compress(frame, COMPRESSION_LEVEL)

    @classmethod
    def decode(cls, blob: bytes, *, max_bytes: int = MAX_CONTENT_BYTES) -> RunContent:
        """The content a blob of :meth:`encode` holds; :class:`CorruptContent` otherwise."""
        if not blob or blob[0] != FORMAT_VERSION:
            raise CorruptContent("not a run content blob of this version")
        inflater = isal_zlib.decompressobj()
        try:
            frame = inflater.decompress(blob[1:], max_bytes + 1)
        except isal_zlib.IsalError as exc:  # type: ignore[misc]  # typed as an instance in the stub
            raise CorruptContent(f"the blob does not inflate: {exc}") from None
        if len(frame) > max_bytes or inflater.unconsumed_tail:
            raise CorruptContent(f"the content inflates beyond {max_bytes:,} bytes")
        if not inflater.eof or inflater.unused_data:
            raise CorruptContent("the blob is cut short or has trailing bytes")
        start = _LENGTH.size
        if len(frame) < start:
            raise CorruptContent("the content has no header")
        (length,) = _LENGTH.unpack_from(frame)
        if length > len(frame) - start:
            raise CorruptContent("the Markdown's length runs past the content")
        try:
            return cls(
                frame[start : start + length].decode("utf-8", _ERRORS),
                frame[start + length :].decode("utf-8", _ERRORS),
            )
        except UnicodeDecodeError as exc:
            raise CorruptContent(f"the content is not UTF-8: {exc}") from None

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the content exactly (not normalized): a run whose digest equals
        the previous run's stores no blob."""
        digest = hashlib.sha256()
        markdown = self.markdown.encode("utf-8", _ERRORS)
        digest.update(_LENGTH.pack(len(markdown)))
        digest.update(markdown)
        digest.update(self.text.encode("utf-8", _ERRORS))
        return f"sha256:{digest.hexdigest()}"


# --- retention --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Which runs of a job are kept: at most the newest ``keep_runs`` (None: no limit by
    count), and none older than ``keep_days`` (None: no limit by age). The newest run is always
    kept, and so is a run whose content a kept run reads."""

    keep_runs: int | None = DEFAULT_RETENTION_RUNS
    keep_days: float | None = None

    def __post_init__(self) -> None:
        if self.keep_runs is not None and (
            isinstance(self.keep_runs, bool) or not isinstance(self.keep_runs, int)
        ):
            raise ValueError("keep_runs must be an integer or None")
        if self.keep_runs is not None and self.keep_runs < 1:
            raise ValueError("keep_runs must be at least 1 (the newest run is always kept)")
        if self.keep_days is not None and not self.keep_days > 0:
            raise ValueError("keep_days must be a positive number of days or None")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What retention needs to know of a run: its number (1, 2, … per job), when it ran, and
    which run's blob holds its content: its own number when it stored one, an earlier run's
    when its content was the same, None when it has no content (a failed fetch)."""

    number: int
    fetched_at: datetime
    content_run: int | None

    @property
    def stores_content(self) -> bool:
        return self.content_run == self.number


def runs_to_drop(runs: Sequence[RunInfo], policy: RetentionPolicy, now: datetime) -> list[int]:
    """The numbers of the runs ``policy`` drops at ``now``, in ascending order.

    A run is kept when it is among the newest ``keep_runs`` and not older than ``keep_days``;
    the newest run is kept regardless; then every kept run keeps the run holding its content.
    Dropping the result leaves every kept run readable.
    """
    if not runs:
        return []
    newest_first = sorted(runs, key=lambda run: run.number, reverse=True)
    cutoff = now - timedelta(days=policy.keep_days) if policy.keep_days is not None else None
    keep = {newest_first[0].number}
    for position, run in enumerate(newest_first):
        within_count = policy.keep_runs is None or position < policy.keep_runs
        within_age = cutoff is None or run.fetched_at >= cutoff
        if within_count and within_age:
            keep.add(run.number)
    keep |= {run.content_run for run in runs if run.number in keep and run.content_run is not None}
    return sorted(run.number for run in runs if run.number not in keep)


__all__ = [
    "COMPRESSION_LEVEL",
    "DEFAULT_RETENTION_RUNS",
    "FORMAT_VERSION",
    "MAX_CONTENT_BYTES",
    "CorruptContent",
    "RetentionPolicy",
    "RunContent",
    "RunInfo",
    "runs_to_drop",
]
