"""Firecrawl's API on TaskCrawler (``/v1``, ``/v2``): an edge adapter, so Firecrawl's SDKs and
tools work with a change of base URL (docs/reference/firecrawl.md).

It stands on the core (the domain, the services, the storage's database) and the core never
imports it: only :mod:`taskcrawler.bootstrap` builds its pieces and :mod:`taskcrawler.api.app`
mounts them.

- :mod:`.inputs`: Firecrawl's requests, in its field names.
- :mod:`.options`: a request's options as TaskCrawler's (formats, page options, webhooks).
- :mod:`.documents`: a job as Firecrawl's document.
- :mod:`.service`: the use cases (scrape, batch scrape, crawl, map, search, extract).
- :mod:`.routes`: the HTTP routes; :mod:`.errors`: Firecrawl's error bodies and statuses.
- :mod:`.hooks`, :mod:`.hook_store`, :mod:`.announcer`: the webhooks of its crawls and batch
  scrapes, what they are, where they are kept, and the worker's duty that sends them.
"""
