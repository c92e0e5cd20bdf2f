#!/usr/bin/env bash
# The project's one test command (README, .ci/run): sets up what the tests
# need on a fresh machine — a Python venv under target/ with the foreign
# writers (pyarrow, numpy, pandas) that produce test files — then runs
# `cargo test`. Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")"
venv=target/test-venv
req=tests/requirements.txt
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/requirements.txt"; then
    echo "run-tests: creating $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
    cp "$req" "$venv/requirements.txt"
fi
export PREFLIGHT_TEST_PYTHON="$PWD/$venv/bin/python"
exec cargo test "$@"
