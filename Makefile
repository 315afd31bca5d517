# svcrest developer commands. Every target creates .venv itself on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# npm's record of what `npm ci` installed: older than the lock means the lock changed.
NPM_STAMP := node_modules/.package-lock.json

CHROMIUM := /usr/bin/chromium

.PHONY: run test lint typecheck tsc docs docs-serve bench clean chromium postgres pgbouncer \
	screenshots compiled test-compiled wheel-check valgrind budget

HOST := 127.0.0.1
PORT := 8000

# Progress lines (==> …) say what the silent steps are doing: a first install takes a minute.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "==> creating $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "==> installing svcrest and its dependencies into $(VENV) (first run: about a minute)"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)
	@echo "==> installed"

# svcrest serve creates var/ and the database on first start (and says so).
run: $(STAMP)
	@echo "==> serving http://$(HOST):$(PORT) (Ctrl-C stops it)"
	@$(BIN)/svcrest serve --host $(HOST) --port $(PORT) --db var/svcrest.db

# Python only: the Markdown under docs/ is never formatted (its --8<-- includes and aligned
# comments are written as they must be built; tests/docs/test_snippets.py checks).
lint: $(STAMP)
	$(BIN)/ruff check src tests $(wildcard docs/tutorial/*.py bench)
	$(BIN)/ruff format --check src tests $(wildcard docs/tutorial/*.py bench)

# The tutorial's files (docs/tutorial) import each other as top-level modules: a second run;
# so do the benchmarks (bench, bench/targets): a third (a few seconds).
typecheck: $(STAMP) tsc
	$(BIN)/mypy
	MYPYPATH=docs/tutorial $(BIN)/mypy docs/tutorial
	MYPYPATH=bench:bench/targets $(BIN)/mypy bench

# TypeScript (package.json's devDependency, exactly as package-lock.json pins it) for tsc.
$(NPM_STAMP): package.json package-lock.json
	@echo "==> installing the npm devDependencies (npm ci)"
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $(NPM_STAMP)

# The declarations of the browser module (svc-rest.d.ts) and tests/ts/usage.ts (tsconfig.json).
tsc: $(NPM_STAMP)
	node_modules/.bin/tsc --noEmit -p tsconfig.json

# The documentation site (mkdocs.yml, docs/) into site/; offline, warnings are errors.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The built site over HTTP, at http://127.0.0.1:8001/ (the pages also open from disk,
# site/index.html; the search box needs HTTP in most browsers).
DOCS_PORT := 8001

docs-serve: docs
	@echo "==> serving site/ at http://$(HOST):$(DOCS_PORT)/ (Ctrl-C stops it)"
	@$(BIN)/python -m http.server --bind $(HOST) --directory site $(DOCS_PORT)

# The browser tests need Debian's Chromium (no browser download); install it when missing.
chromium:
	test -x $(CHROMIUM) || { apt-get update -qq && apt-get install -y -qq chromium; }

# The PostgreSQL tests start their own server with Debian's initdb/pg_ctl (in
# /usr/lib/postgresql/<version>/bin); install PostgreSQL when they are missing.
postgres:
	command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq postgresql; }

# The PgBouncer tests start their own pooler (Debian's pgbouncer, transaction mode) in front
# of the test PostgreSQL; install it when it is missing.
pgbouncer:
	command -v pgbouncer >/dev/null || ls /usr/sbin/pgbouncer >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq pgbouncer; }

test: lint typecheck docs chromium postgres pgbouncer
	$(BIN)/pytest
	@$(MAKE) --no-print-directory wheel-check
	@$(MAKE) --no-print-directory budget

# The instruction counts of bench/budget.py need Debian's valgrind (callgrind).
valgrind:
	command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }

# The instruction budget (bench/budget.json): svcrest's instructions per request as a ratio to
# Falcon's app counted in the same run (callgrind: the figures do not depend on the load).
# Fails when a case is more than the file's tolerance past its ceiling; about two minutes.
budget: $(STAMP) valgrind
	@echo "==> counting instructions per request against Falcon (bench/budget.py, callgrind)"
	$(BIN)/python bench/budget.py --check

# The package as users get it: the sdist and the wheel (python -m build), the wheel installed
# into a clean venv under build/, and the README's first example and `svcrest --version` run
# against it from an empty folder (tests/packaging/check_wheel.py): nothing may depend on
# files outside the package.
WHEEL_VENV := build/wheel-venv

wheel-check: $(STAMP)
	rm -rf dist $(WHEEL_VENV)
	@echo "==> building the sdist and the wheel, installing the wheel into $(WHEEL_VENV)"
	@$(BIN)/python -m build --outdir dist . >/dev/null
	@$(PYTHON) -m venv $(WHEEL_VENV)
	@$(WHEEL_VENV)/bin/python -m pip install --quiet dist/svcrest-*.whl
	$(BIN)/python tests/packaging/check_wheel.py dist $(WHEEL_VENV)/bin

# The compiled build (issue 13): a wheel whose hot modules (pyproject.toml's mypyc hook) are
# compiled with mypyc, installed into build/compiled, apart from .venv, which stays pure
# Python for `make test`. Needs a C compiler and Python's headers; the wheel falls back to
# nothing: every other build is pure Python.
COMPILED := build/compiled

compiled: $(STAMP)
	rm -rf $(COMPILED) build/wheel
	@echo "==> building the compiled wheel (mypyc; about three minutes)"
	HATCH_BUILD_HOOK_ENABLE_MYPYC=true HATCH_BUILD_CLEAN_HOOKS_AFTER=true \
		$(BIN)/python -m pip wheel --quiet --no-deps -w build/wheel .
	$(BIN)/python -m pip install --quiet --no-deps --target $(COMPILED) build/wheel/svcrest-*.whl

# The fast tests (not the slow real-server ones) against the compiled modules.
test-compiled: compiled
	SVCREST_EXPECT_COMPILED=1 PYTHONPATH=$(COMPILED) $(BIN)/pytest -m "not slow"

# The screenshots in docs/ (login page, documentation site) in Debian's Chromium.
screenshots: docs chromium
	$(BIN)/python -m tests.browser.screenshots docs

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist site .mypy_cache .pytest_cache .ruff_cache node_modules
