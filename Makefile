# Conduit Console. `make run` serves the console, `make test` runs every check.
# GNU make; recipes use bash.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
# Debian's Chromium in its headless shell (tests/support/browser.py says why), or the
# browser CONDUIT_TEST_CHROMIUM names, which the tests then run in.
CHROMIUM := $(or $(CONDUIT_TEST_CHROMIUM),/usr/bin/chromium-headless-shell)

.PHONY: help venv test run lint fmt clean chromium screenshot bench

help:
	@echo "make run    migrate, create the dev operator, serve on http://127.0.0.1:8000/"
	@echo "            (logs in data/logs/; make run V=1 keeps them on the terminal)"
	@echo "make test   ruff, ruff format --check, mypy, manage.py check,"
	@echo "            makemigrations --check, then pytest on SQLite and, beside it, on a"
	@echo "            throwaway PostgreSQL cluster when its binaries are installed"
	@echo "make lint   ruff and mypy only      make fmt   format and autofix"
	@echo "make clean  remove .venv, caches and staticfiles (keeps data/)"

venv: $(STAMP)

# Re-run only when pyproject.toml changes (or the venv is missing or too old). `make run`
# needs only the runtime packages; the dev tools (mypy, ruff, pytest, Playwright) were
# most of a fresh clone's time to first page. The dev install includes the runtime one.
$(STAMP): pyproject.toml
	@PYTHON='$(PYTHON)' bash scripts/venv.sh '.[dev]'
	@touch $@ $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml
	@PYTHON='$(PYTHON)' bash scripts/venv.sh '.'
	@touch $@

# Browser tests need Debian's Chromium (its headless shell). As root we install it; if it is still missing,
# CI fails here (before the long steps) and a local run goes on without the `browser`
# tests, saying so.
chromium:
	@if [[ ! -x $(CHROMIUM) && $$(id -u) -eq 0 ]]; then \
		echo "Installing Debian's chromium-headless-shell for the browser tests"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -q && apt-get install -y -q chromium-headless-shell; \
	fi
	@if [[ ! -x $(CHROMIUM) && "$${CI:-}" == "true" ]]; then \
		echo "error: $(CHROMIUM) is missing and CI=true: browser tests must run in CI." >&2; \
		echo "Run as root (make test installs it) or: apt-get install -y chromium-headless-shell" >&2; \
		exit 1; \
	fi

# The whole suite runs twice: on SQLite, and on PostgreSQL in a throwaway cluster
# (scripts/pg-throwaway.sh) when the server binaries are installed. The two run side by
# side as two jobs (scripts/test-engines.sh), each with its own databases and log; make
# test fails if either fails, naming the engine and its failures. Tests that prove one
# engine's own mechanism are marked sqlite_only or postgres_only and deselected on the
# other engine; tests that touch no engine at all (engine_neutral, marked at collection
# by tests/support/engine_neutral.py) and the deploy suite (its topology needs
# PostgreSQL) run once; everything else (the shared contract cases, the negative
# controls, the multi-process tests, the console) must pass on both.
#
# TEST_WORKERS: pytest-xdist's -n for each engine's job (0: one pytest process each);
# every worker has its own test database and template, and the browser tests run as
# two groups, each on one worker (--dist loadgroup; tests/console/browser/conftest.py).
# SQLITE_WORKERS / PG_WORKERS set one engine's. Measured on this 2-core machine with
# `CI=true bash .ci/run` or the same two jobs, nothing else running: one process each
# took 1,707 s in all (SQLite 19 min 20 s, PostgreSQL 25 min 21 s; stop 38), two each
# 891 s (7 December 2026). On 7 December at 11:00 the same machine ran slower (the
# same tree, two each: 28 min 38 s, SQLite 25 min 25 s, PostgreSQL 28 min 18 s), and
# three each, with the browser tests in two groups, took 26 min 6 s (SQLite 23 min
# 33 s, PostgreSQL 25 min 28 s), and a fresh clone of the same arrangement 31 min 13 s
# an hour later: the runs differed more than the arrangements. Both CPUs were busy all
# through (/proc/stat every 10 s: at most 5% idle), and then a third worker changes
# little (its own test database, template and Chromium); where the CPU waits, as in
# the measurements before, it fills the waits. The browser tests are 40% of each job's
# test time: in one group they were one worker's for most of the job. Measure again,
# in fresh clones, before changing it. With the browser tests in chromium-headless-shell
# (31% less CPU for them alone) and the slow modules first, a fresh clone's .ci/run took
# 35 min 44 s (SQLite 32 min 14 s, PostgreSQL 33 min 54 s; 7 December, 18:20), within
# the spread of the runs before it (SQLite 34 min 2 s, PostgreSQL 33 min 43 s at 15:00):
# the CPUs stay busy all through, and what the browser saved went to the other tests.
# With the bytecode kept and collection cheaper (below), a fresh clone's .ci/run took
# 29 min 17 s (SQLite 24 min 48 s, PostgreSQL 27 min 26 s; 7 December, 22:07), against
# 33 min 12 s for the tree before it (SQLite 30 min 57 s, PostgreSQL 31 min 11 s).
TEST_WORKERS ?= 3
# Bytecode is written (__pycache__, which git ignores) even where the environment says
# not to (PYTHONDONTWRITEBYTECODE=1 on this machine): without it each of the six pytest
# workers rewrote every test module's asserts from source, and its collection took 27 s
# of CPU (11 s with the cache), and every Python child they start compiled the project
# again. pytest collects once beside mypy, so the workers find the cache made; a test
# that cannot be collected fails here, before half an hour of tests.
test: export PYTHONDONTWRITEBYTECODE :=
test: venv chromium
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@collected=$$(mktemp); \
	$(VENV)/bin/pytest --collect-only -qq -p no:cacheprovider >"$$collected" 2>&1 & collecting=$$!; \
	echo "$(VENV)/bin/mypy   (and pytest --collect-only beside it)"; \
	$(VENV)/bin/mypy; \
	if ! wait $$collecting; then cat "$$collected"; echo "error: pytest cannot collect the tests" >&2; exit 1; fi; \
	rm -f "$$collected"
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run
	@browser=""; \
	if [[ ! -x $(CHROMIUM) ]]; then \
		echo "WARNING: $(CHROMIUM) is missing: SKIPPING the browser tests (-m 'not browser')."; \
		echo "WARNING: install it with: sudo apt-get install -y chromium-headless-shell"; \
		browser=" and not browser"; \
	fi; \
	deploy=""; \
	if [[ -n "$$browser" ]] || ! { command -v nginx || [[ -x /usr/sbin/nginx ]]; } >/dev/null || \
		! command -v openssl >/dev/null; then \
		if [[ "$${CI:-}" == "true" ]]; then \
			echo "error: the deploy suite needs nginx, openssl and chromium-headless-shell, and CI=true." >&2; \
			echo "Install them with: apt-get install -y nginx openssl chromium-headless-shell (.ci/run does)" >&2; \
			exit 1; \
		fi; \
		echo "WARNING: nginx, openssl or chromium-headless-shell is missing: SKIPPING the deploy suite (-m 'not deploy')."; \
		deploy=" and not deploy"; \
	fi; \
	TEST_WORKERS=$(TEST_WORKERS) bash scripts/test-engines.sh \
		--sqlite "not postgres_only and not deploy$$browser" \
		--postgresql "not sqlite_only and not engine_neutral$$browser$$deploy"

# V=1 keeps the simulator's and gunicorn's logs on the terminal.
run: $(RUN_STAMP)
	bash scripts/run.sh $(if $(V),-v)

# Retake docs/screenshot.png (the README's picture) with the browser test that draws it.
screenshot: venv chromium
	CONDUIT_UPDATE_SCREENSHOT=1 $(VENV)/bin/pytest tests/console/browser/test_browser.py -k screenshot -q

# Benchmarks (bench/README.md): quick sizes, report in bench/report.md; BENCH_FULL=1 for
# the full sizes, report in bench/RESULTS.md. Figures only: a missed target fails nothing.
bench: venv
	BENCH_FULL=$(BENCH_FULL) $(PY) -m bench

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fmt: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) staticfiles .mypy_cache .ruff_cache .pytest_cache .hypothesis *.egg-info
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +
