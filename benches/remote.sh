#!/usr/bin/env bash
# Data in object storage (#20): 1,000 Parquet shards (500 of the shared
# benchmark's labels shape, 500 cut from its tokens_bad.parquet) in a local
# S3 server (moto on 127.0.0.1, from the test venv), checked by preflight
# (release build), DuckDB with httpfs and Polars' scan_parquet('s3://...'),
# the same checks as ../shared/bench/peers.py, whole processes, wall clock,
# median of REPS (default 3) after one untimed run; then each once more
# through the counting proxy of tests/remote/servers.py for requests and
# bytes per file. All must report the same counts (else the run fails).
#
#   PREFLIGHT_BIN=target/bench/release/preflight DUCKDB_PY=/path/to/python \
#       bash benches/remote.sh [WORK_DIR]
#
# DuckDB 2.0.1 of the bench venv cannot load httpfs here (it would download
# it; this machine reaches package registries only). DUCKDB_PY names a
# Python whose duckdb can: the script's setup below makes one from PyPI,
# duckdb 1.5.5 with the extension's PyPI package `duckdb-extension-httpfs`
# (loaded from the path it ships), when DUCKDB_PY is unset.
# SERVER=s3s times the tools against s3s-fs (an S3 server in Rust over a
# directory, installed below into target/tools) instead of moto, which
# answers only some 200 requests a second; requests and bytes are still
# counted through the proxy in front of moto (they do not depend on the
# server).
# SHARDS, LABEL_ROWS, TOKEN_ROWS, REPS, PEER_PY, TOKENS_SRC: see remote.py.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/preflight-remote-bench}
py=${BENCH_PY:-target/test-venv/bin/python}
export PREFLIGHT_BIN=${PREFLIGHT_BIN:-target/bench/release/preflight}
export SCHEMAS=${SCHEMAS:-../shared/bench/schemas}
if [ -z "${DUCKDB_PY:-}" ]; then
    venv="$work/duckdb-venv"
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q duckdb==1.5.5 duckdb-extension-httpfs==1.5.5
    fi
    export DUCKDB_PY="$venv/bin/python"
fi
if [ "${SERVER:-moto}" = s3s ] && [ ! -x target/tools/bin/s3s-fs ]; then
    cargo install s3s-fs --version 0.14.1 --features binary --locked \
        --root target/tools --target-dir target/tools-build
fi
mkdir -p "$work"
"$py" benches/remote.py "$work"
