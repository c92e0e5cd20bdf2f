#!/usr/bin/env bash
# Lakehouse tables in object storage (#31): a 1,000-file Delta table and a
# 1,000-file Iceberg table in a local S3 server, checked by preflight
# (release build), DuckDB (delta_scan, iceberg_scan), deltalake + PyArrow
# and PyIceberg + PyArrow; see lakehouse.py.
#
#   SERVER=s3s PREFLIGHT_BIN=target/bench/release/preflight \
#       bash benches/lakehouse.sh [WORK_DIR]
#
# DuckDB's extensions are not downloadable here: the setup below makes a
# venv with duckdb 1.5.5 and the PyPI packages of its httpfs, delta, avro
# and iceberg extensions (loaded from the paths they ship) unless DUCKDB_PY
# names one. SERVER=s3s times the tools against s3s-fs (installed into
# target/tools) instead of moto; requests are counted through the proxy in
# front of moto either way.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/preflight-lakehouse-bench}
py=${BENCH_PY:-target/test-venv/bin/python}
export PREFLIGHT_BIN=${PREFLIGHT_BIN:-target/bench/release/preflight}
export SCHEMAS=${SCHEMAS:-../shared/bench/schemas}
if [ -z "${DUCKDB_PY:-}" ]; then
    venv="$work/duckdb-venv"
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q duckdb==1.5.5 duckdb-extension-httpfs==1.5.5 \
            duckdb-extension-delta==1.5.5 duckdb-extension-avro==1.5.5 duckdb-extension-iceberg==1.5.5
    fi
    export DUCKDB_PY="$venv/bin/python"
fi
if [ "${SERVER:-moto}" = s3s ] && [ ! -x target/tools/bin/s3s-fs ]; then
    cargo install s3s-fs --version 0.14.1 --features binary --locked \
        --root target/tools --target-dir target/tools-build
fi
mkdir -p "$work"
"$py" benches/lakehouse.py "$work"
