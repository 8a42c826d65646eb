"""Fetching pages: one long-lived aiohttp session per process, typed errors, hard limits."""

from taskcrawler.fetch.fetcher import FetchedPage, Fetcher

__all__ = ["FetchedPage", "Fetcher"]
