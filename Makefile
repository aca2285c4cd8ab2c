# The two commands a user needs: `make run` and `make test`. Each sets up what
# it needs (virtualenv, packages, jars) and is quick when all is in place.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast test-caveats setup jars

run: setup
	$(BIN)/harness run scenarios/smoke.yaml

test: setup
	$(BIN)/pytest

# Unit tests only (no broker, no Spark): the inner loop.
test-fast: setup
	$(BIN)/pytest -m "not e2e"

# The whole caveat catalog on real runs (about 20 minutes), outside `make test`.
test-caveats: setup
	$(BIN)/pytest -m catalog -s

setup: $(STAMP) jars

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "make: Python 3.10+ is required (found " + sys.version.split()[0] + ")")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

# Idempotent: Maven runs only for a jar set that is missing or whose pom changed.
jars: $(STAMP)
	@$(BIN)/harness jars
