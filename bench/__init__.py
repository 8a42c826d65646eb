"""Benchmarks of TaskCrawler: ``python -m bench.run`` and the others docs/benchmarks.md lists.

Run them from the repository root: they use the tests' harness (``tests.support``) to find or
start PostgreSQL and Redis, to create and drop databases and key prefixes, and to run
``taskcrawler`` processes.
"""
