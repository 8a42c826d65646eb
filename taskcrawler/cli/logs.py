"""Logging: readable in a terminal, one JSON object per line in production."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

import orjson

from taskcrawler.observability.logs import JobContextFilter, TextFormatter

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "color_message",  # uvicorn's ANSI-coloured duplicate of msg
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        # Fields passed with extra= (job_id, url, ...) become top-level keys.
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure_logging(log_format: str = "auto", level: str = "INFO") -> None:
    use_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if use_json else TextFormatter())
    handler.addFilter(JobContextFilter())  # job_id on every line logged while handling a job
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Alembic narrates every plugin it loads at INFO; the migration lines themselves stay.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    # httpx and httpcore log every request of the client commands at INFO and DEBUG: the
    # commands print what happened themselves.
    for chatty in ("httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
