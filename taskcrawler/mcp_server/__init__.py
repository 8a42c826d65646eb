"""TaskCrawler's tools for AI agents over the Model Context Protocol: scrape, map, get_job.

The tools call the HTTP API through :class:`taskcrawler.client.AsyncTaskCrawler`, so they see
what the caller's key sees, under its limits, whichever transport carries them: stdio
(``taskcrawler mcp``, talking to a running API) or streamable HTTP (``/mcp`` on the API itself).
"""

from taskcrawler.mcp_server.tools import TOOLS, ClientFor, build_server

__all__ = ["TOOLS", "ClientFor", "build_server"]
