#!/usr/bin/env bash
# Installs the harness pinned, from the source this project's CI recipe names in its env (`harness docs ci`):
#   HARNESS_WHEEL_URL + HARNESS_WHEEL_SHA256   a wheel, checked against its sha256 before pip sees it
#   HARNESS_INDEX_URL + HARNESS_VERSION        that version from that index only (--index-url, never an extra one)
# Never a bare name from the default index: anyone could publish it. PYSPARK_VERSION, when set, is the job's own
# pyspark, installed first: the harness keeps it and `harness jars` fetches its connector. Usage: bash
# ci/install-harness.sh [VENV]
set -euo pipefail
venv="${1:-.venv}"
if [ -n "${HARNESS_WHEEL_URL:-}" ] && [ -n "${HARNESS_WHEEL_SHA256:-}" ]; then
  mkdir -p .harness-wheel
  wheel=".harness-wheel/${HARNESS_WHEEL_URL##*/}"  # pip reads the version from the wheel's own file name
  curl -fsSL --retry 3 "$HARNESS_WHEEL_URL" -o "$wheel"
  echo "$HARNESS_WHEEL_SHA256  $wheel" | sha256sum --check --quiet - || {
    echo "install-harness: $HARNESS_WHEEL_URL does not have the sha256 HARNESS_WHEEL_SHA256 names" >&2
    exit 1
  }
  requirement="$wheel"
  index=()
elif [ -n "${HARNESS_INDEX_URL:-}" ] && [ -n "${HARNESS_VERSION:-}" ]; then
  requirement="spark-kafka-harness==$HARNESS_VERSION"
  index=(--index-url "$HARNESS_INDEX_URL")
else
  echo "install-harness: set HARNESS_WHEEL_URL and HARNESS_WHEEL_SHA256, or HARNESS_INDEX_URL and" \
    "HARNESS_VERSION, in the CI recipe's env (see: harness docs ci)" >&2
  exit 1
fi
test -x "$venv/bin/python" || python3 -m venv "$venv"
if [ -n "${PYSPARK_VERSION:-}" ]; then
  "$venv/bin/pip" install -q "pyspark==$PYSPARK_VERSION"
fi
"$venv/bin/pip" install -q "${index[@]}" "$requirement"
"$venv/bin/harness" --version
