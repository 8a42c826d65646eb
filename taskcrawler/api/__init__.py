"""The HTTP API: handlers translate HTTP to service calls, nothing more."""

from taskcrawler.api.app import create_app

__all__ = ["create_app"]
