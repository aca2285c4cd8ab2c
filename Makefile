# The two commands a user needs: `make run` and `make test`. Each sets up what
# it needs (virtualenv, packages, jars) and is quick when all is in place.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The drivers' Spark by default: the newest whose Kafka connector, Avro, Delta and Iceberg all resolve
# (harness/spark/lines.py, docs/spark.md). Any verified version works: `make setup SPARK=4.2.0`.
SPARK  ?= 4.2.0
STAMP  := $(VENV)/.installed-spark-$(SPARK)

.PHONY: run test test-fast test-caveats test-long setup jars docker-packages lint

run: setup
	$(BIN)/harness run scenarios/smoke.yaml

test: setup docker-packages lint
	$(BIN)/pytest

# ruff (pyproject.toml [tool.ruff]): lint, and the format every file keeps.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Unit tests only (no broker, no Spark): the inner loop.
test-fast: setup
	$(BIN)/pytest -m "not e2e"

# The long real runs kept out of `make test`, nightly (each, and what it covers that `make test` does not:
# docs/tests.md): a storm, a search, three brokers in containers, a Spark master of one's own, the frozen runs
# recorded afresh, the wheel installed in an empty folder and a new team's path from there.
test-long: setup docker-packages
	$(BIN)/pytest -m long

# The whole caveat catalog on real runs (about 20 minutes), outside `make test`.
test-caveats: setup
	$(BIN)/pytest -m catalog -s

setup: $(STAMP) jars
	@$(BIN)/harness images build --if-engine

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "make: Python 3.10+ is required (found " + sys.version.split()[0] + ")")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]' 'pyspark==$(SPARK)'
	@rm -f $(VENV)/.installed*
	@touch $@

# Idempotent: Maven runs only for a jar set that is missing or whose pom changed.
jars: $(STAMP)
	@$(BIN)/harness jars

# The Docker backend's tests need an engine, docker-compose and debootstrap (to build the base image): Debian's
# packages are installed when missing, as root with apt. The tests start dockerd themselves when none answers,
# and stop it after. Elsewhere the Docker tests are skipped, saying why; in CI (CI set) a failed install fails.
DOCKER_PACKAGES := docker.io docker-compose debootstrap
docker-packages:
	@export PATH="$$PATH:/usr/sbin"; \
	if command -v dockerd >/dev/null && command -v docker-compose >/dev/null && command -v debootstrap >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $(DOCKER_PACKAGES) for the Docker tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DOCKER_PACKAGES) >/dev/null) \
	        || { echo "installing $(DOCKER_PACKAGES) failed: the Docker tests will be skipped"; [ -z "$$CI" ]; }; \
	else echo "no Docker engine here, and not root with apt to install one: the Docker tests will be skipped"; fi
