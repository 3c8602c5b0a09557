# The two commands of the README, and a few more. Each sets up what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test quick check bench setup system-deps clean

demo: $(STAMP)
	$(BIN)/kg demo

# The tests run on two workers (pytest-xdist), each taking the next test as it is free; a worker
# starts its own servers. On two cores the suite takes 18.5 minutes, against 31 in one process.
WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(WORKERS) --dist worksteal

test: check system-deps
	$(PYTEST)

# The code guards its own shape: lint, format and the layers contract (pyproject.toml).
check: $(STAMP)
	$(BIN)/ruff check kgrdf tests bench
	$(BIN)/ruff format --check kgrdf tests bench
	$(BIN)/lint-imports

quick: $(STAMP) system-deps
	$(PYTEST) -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/run.py

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# rapper (Debian's raptor2-utils) is the second RDF parser the export tests read our files with;
# sst_dump (Debian's rocksdb-tools) reads the index's compressed files for the forget tests' byte scan;
# virtuoso-t and isql-vt (Debian's virtuoso-opensource) are the second SPARQL server of the remote index's
# tests, which start it from an ini of their own (the package's own service is not used);
# chromium is the real browser the console's tests drive through Playwright.
system-deps:
	@command -v rapper >/dev/null && command -v sst_dump >/dev/null && command -v virtuoso-t >/dev/null \
	  && command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq raptor2-utils rocksdb-tools virtuoso-opensource chromium >/dev/null; }

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist
