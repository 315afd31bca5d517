# svcrest developer commands. Every target creates .venv itself on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

CHROMIUM := /usr/bin/chromium

.PHONY: run test lint typecheck docs bench clean chromium

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	mkdir -p var
	$(BIN)/svcrest serve --host 127.0.0.1 --port 8000 --db var/svcrest.db

lint: $(STAMP)
	$(BIN)/ruff check src tests $(wildcard docs/tutorial/*.py bench)
	$(BIN)/ruff format --check src tests $(wildcard docs/tutorial/*.py bench)

# The tutorial's files (docs/tutorial) import each other as top-level modules: a second run.
typecheck: $(STAMP)
	$(BIN)/mypy
	MYPYPATH=docs/tutorial $(BIN)/mypy docs/tutorial

# The documentation site (mkdocs.yml, docs/) into site/; offline, warnings are errors.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The browser tests need Debian's Chromium (no browser download); install it when missing.
chromium:
	test -x $(CHROMIUM) || { apt-get update -qq && apt-get install -y -qq chromium; }

test: lint typecheck docs chromium
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist site .mypy_cache .pytest_cache .ruff_cache
