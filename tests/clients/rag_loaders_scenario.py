"""The RAG loaders users point at a Firecrawl server, against TaskCrawler, each mode with the
loader's defaults: LangChain's ``FireCrawlLoader`` (langchain-community) or LlamaIndex's
``FireCrawlWebReader`` (llama-index-readers-web), both wrapping firecrawl-py. Run as a script
with ``.venv/rag-loaders`` first on PYTHONPATH (``make clients`` installs them there):

    python rag_loaders_scenario.py langchain|llamaindex CONFIG_JSON

CONFIG_JSON has ``api_url`` and ``site`` (the local site's base URL). Prints one JSON object: for
each mode, the Documents the loader returned (their text and metadata) or the error it raised.
Each mode runs with the loader's defaults; extract is given the prompt LlamaIndex requires (and
LangChain's docs show), search its query.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

#: Firecrawl's docs' placeholder key: TaskCrawler without keys takes it as anonymous.
API_KEY = "fc-YOUR-API-KEY"
MODES = ("scrape", "crawl", "map", "extract", "search")
PROMPT = "The article's title and how many words it has"
QUERY = "river bridge"


def _langchain(api_url: str, mode: str, url: str) -> list[dict[str, Any]]:
    # langchain-community warns on import that it is being sunset: not this test's concern.
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.document_loaders import FireCrawlLoader

    asked: dict[str, Any] = {"url": url}
    if mode == "extract":
        asked["params"] = {"prompt": PROMPT}
    if mode == "search":
        asked = {"query": QUERY}
    loader = FireCrawlLoader(api_key=API_KEY, api_url=api_url, mode=mode, **asked)
    return [{"text": doc.page_content, "metadata": doc.metadata} for doc in loader.load()]


def _llamaindex(api_url: str, mode: str, url: str) -> list[dict[str, Any]]:
    reader_class = _firecrawl_web_reader()
    params = {"prompt": PROMPT} if mode == "extract" else None
    reader = reader_class(api_key=API_KEY, api_url=api_url, mode=mode, params=params)
    asked = {"query": QUERY} if mode == "search" else {"url": url}
    return [{"text": doc.text, "metadata": doc.metadata} for doc in reader.load_data(**asked)]


def _firecrawl_web_reader() -> Any:
    """``FireCrawlWebReader`` from its own module, unchanged. The package's ``__init__`` also
    imports the other readers' scrapy, selenium, playwright, lxml, ... (500 MB more to install),
    so the package is entered without running it."""
    name = "llama_index.readers.web"
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{name} is not installed")
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules[name] = package
    from llama_index.readers.web.firecrawl_web.base import FireCrawlWebReader

    return FireCrawlWebReader


LOADERS: dict[str, Callable[[str, str, str], list[dict[str, Any]]]] = {
    "langchain": _langchain,
    "llamaindex": _llamaindex,
}


def main() -> None:
    loader, config = sys.argv[1], json.loads(sys.argv[2])
    site = config["site"]
    # Each run starts from a URL of its own (one job per URL and key: the loaders run at once).
    urls = {
        "scrape": f"{site}/article?{loader}",
        "crawl": f"{site}/crawl/0?{loader}",
        "map": f"{site}/crawl/0?map-{loader}",
        "extract": f"{site}/article?extract-{loader}",
        "search": "",
    }
    out: dict[str, Any] = {}
    for mode in MODES:
        run(out, mode, lambda mode=mode: LOADERS[loader](config["api_url"], mode, urls[mode]))
    if loader == "llamaindex":
        run(out, "crawl_readme", lambda: _llamaindex_readme_crawl(config["api_url"], site))
    print(json.dumps(out, default=str))


def run(out: dict[str, Any], name: str, call: Callable[[], Any]) -> None:
    try:
        out[name] = call()
    except Exception as exc:
        out[name] = {"raised": f"{type(exc).__name__}: {exc}"}


def _llamaindex_readme_crawl(api_url: str, site: str) -> list[dict[str, Any]]:
    """The crawl of the reader's README: page formats and a limit among the crawl's params."""
    reader = _firecrawl_web_reader()(
        api_key=API_KEY,
        api_url=api_url,
        mode="crawl",
        params={"formats": ["markdown", "html"], "limit": 3},
    )
    docs = reader.load_data(url=f"{site}/crawl/0?readme")
    return [{"text": doc.text, "metadata": doc.metadata} for doc in docs]


if __name__ == "__main__":
    main()
