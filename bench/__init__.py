"""TaskCrawler benchmark: ``python -m bench.run`` (see the README, section "Benchmarks")."""
