#!/usr/bin/env bash
# After the gate says no (#17): --violations-out on 10M violations, and a
# cached rerun of the shared benchmark's whole dataset folder against the
# first (uncached) run. Whole processes, /usr/bin/time -v for peak RSS.
#
#   PREFLIGHT_BIN=target/release/preflight bash benches/gates.sh bench/data
#
# DATA_DIR is the folder shared/bench/gen.py wrote (its schemas are used
# as they are); a 10M-row .npy of bad labels is written beside it.
set -euo pipefail
bin=${PREFLIGHT_BIN:-target/release/preflight}
data=${1:-bench/data}
schemas=$(cd "$(dirname "$0")/../../shared/bench/schemas" 2>/dev/null && pwd || echo ../shared/bench/schemas)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${BENCH_PY:-.venv/bin/python}
threads=${BENCH_THREADS:-2}

timed() { # label, command...
    local label=$1; shift
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -v "$@" >"$work/out" 2>"$work/time" || true
    t1=$(date +%s.%N)
    local rss
    rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time")
    printf '| %s | %.3f | %d |\n' "$label" "$(echo "$t1 - $t0" | bc)" "$((rss / 1024))"
}

"$py" -c "import numpy as np, sys; a = np.full(10_000_000, 7, np.int64); np.save(sys.argv[1], a)" "$work/bad_labels.npy"
printf 'version: 1\ncolumns:\n  bad_labels: {kind: class, num_classes: 3}\n' >"$work/s.yaml"

echo "| run | seconds | peak RSS MB |"
echo "|---|---:|---:|"
timed "10M violations, report only" "$bin" check -s "$work/s.yaml" -j "$threads" --format json "$work/bad_labels.npy"
for ext in jsonl csv parquet; do
    timed "10M violations, --violations-out .$ext" "$bin" check -s "$work/s.yaml" -j "$threads" --format json \
        --violations-out "$work/v.$ext" "$work/bad_labels.npy"
done
wc -l <"$work/v.jsonl" | sed 's/^/violations written (jsonl lines): /' >&2

# The whole dataset folder, each dataset with its own schema, first run vs
# cached rerun (the same command twice with --cache).
cache="$work/cache"
for pass in first cached; do
    total=0
    for f in labels.parquet labels_bad.parquet tokens.parquet tokens_bad.parquet tokens_polars.parquet \
        tokens_bad_polars.parquet tokens_nostats.parquet labels.csv labels.npy many; do
        case $f in
        tokens*) s=$schemas/tokens.yaml ;;
        labels.npy) s=$schemas/labels_npy.yaml ;;
        *) s=$schemas/labels.yaml ;;
        esac
        [ -e "$data/$f" ] || continue
        t0=$(date +%s.%N)
        "$bin" check -s "$s" -j "$threads" --format json --cache "$cache" "$data/$f" >"$work/$f.$pass.json" || true
        t1=$(date +%s.%N)
        total=$(echo "$total + $t1 - $t0" | bc)
    done
    printf '| dataset folder, %s run (--cache) | %.3f | |\n' "$pass" "$total"
done
for f in "$work"/*.first.json; do
    cmp -s "$f" "${f%.first.json}.cached.json" || echo "DIFFERENT REPORT: $f" >&2
done
