#!/usr/bin/env bash
# Token shards (#16): a uint16 token stream (nanoGPT's raw .bin) and a
# Megatron-LM indexed dataset of the same tokens (its .bin a hard link to
# the stream, its .idx written here to megatron-core's MMIDIDX layout, one
# 2048-token sequence per document), checked by preflight (2 threads) beside
# the NumPy one-liners users write for the same question, whole processes,
# page cache warm, median of BENCH_REPS; and the memory-scan ceiling of
# ../shared/bench/limits.sh (memscan.c) on the same machine.
#
#   PREFLIGHT_BIN=target/release/preflight bash benches/tokens.sh [DIR] [TOKENS]
#
# DIR (default /tmp/preflight-tokens-bench) is created and removed at exit
# (BENCH_KEEP=1 keeps it); TOKENS defaults to 2^31 (a 4 GiB uint16 stream).
# Ids are random below V = 50257 with 1,000 planted ids >= V at known places;
# every run's count is compared with NumPy's (a mismatch fails the script).
# Env: PREFLIGHT_BIN, SHARED_BENCH (../shared/bench), BENCH_PY (a Python with numpy; default
# target/test-venv/bin/python), BENCH_THREADS (2), BENCH_REPS (3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${PREFLIGHT_BIN:-target/release/preflight}
dir=${1:-/tmp/preflight-tokens-bench}
tokens=${2:-2147483648}
py=${BENCH_PY:-target/test-venv/bin/python}
threads=${BENCH_THREADS:-2}
reps=${BENCH_REPS:-3}
# ../shared/bench beside the repository (or beside its main checkout, from
# a git worktree); SHARED_BENCH overrides.
common=$(cd "$here/.." && git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || echo "$here/../.git")
shared=${SHARED_BENCH:-$(dirname "$common")/../shared/bench}
memscan_c=$shared/memscan.c
[ -f "$memscan_c" ] || { echo "no $memscan_c: set SHARED_BENCH" >&2; exit 1; }
mkdir -p "$dir"
work=$(mktemp -d)
cleanup() {
    rm -rf "$work"
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$dir"
}
trap cleanup EXIT

# --- data: written in 64M-token blocks, never held whole in memory ---
"$py" - "$dir" "$tokens" <<'EOF'
import os, struct, sys
import numpy as np
d, n = sys.argv[1], int(sys.argv[2])
V, SEQ, BLOCK = 50257, 2048, 1 << 26
rng = np.random.default_rng(16)
planted = np.sort(rng.choice(n, size=min(1000, n), replace=False))
with open(os.path.join(d, "stream.bin"), "wb") as f:
    for start in range(0, n, BLOCK):
        block = rng.integers(0, V, min(BLOCK, n - start), dtype=np.uint16)
        here = planted[(planted >= start) & (planted < start + len(block))] - start
        block[here] = V + (here % 1000)
        block.tofile(f)
os.makedirs(os.path.join(d, "megatron"), exist_ok=True)
bin_path = os.path.join(d, "megatron", "data.bin")
if os.path.exists(bin_path):
    os.remove(bin_path)
os.link(os.path.join(d, "stream.bin"), bin_path)
# MMIDIDX: magic, version 1, dtype code 8 (uint16), sequence and document
# counts, int32 lengths, int64 byte pointers, int64 document indices.
lengths = np.full(n // SEQ, SEQ, np.int32)
if n % SEQ:
    lengths = np.append(lengths, np.int32(n % SEQ))
pointers = np.zeros(len(lengths), np.int64)
np.cumsum(lengths[:-1].astype(np.int64) * 2, out=pointers[1:])
docs = np.arange(len(lengths) + 1, dtype=np.int64)
with open(os.path.join(d, "megatron", "data.idx"), "wb") as f:
    f.write(b"MMIDIDX\x00\x00" + struct.pack("<Q", 1) + struct.pack("<B", 8))
    f.write(struct.pack("<Q", len(lengths)) + struct.pack("<Q", len(docs)))
    f.write(lengths.tobytes()); f.write(pointers.tobytes()); f.write(docs.tobytes())
with open(os.path.join(d, "expected"), "w") as f:
    f.write(str(len(planted)))
EOF
expected=$(cat "$dir/expected")
printf 'version: 1\ncolumns:\n  tokens: {kind: index, size: 50257, dtype: uint16}\n' >"$work/s.yaml"
# Documents too: 50256 (GPT-2's <|endoftext|>) occurs at random, one id in
# 50,257, as document ends; units are then cut after one.
printf 'version: 1\ncolumns:\n  tokens: {kind: index, size: 50257, dtype: uint16, eod_id: 50256, max_length: 1000000}\n' >"$work/eod.yaml"
bytes=$(stat -c %s "$dir/stream.bin")
cat "$dir/stream.bin" >/dev/null  # warm the page cache (the .bin is the same file)

now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# timed LABEL COUNT_FILTER COMMAND...: median seconds and peak RSS of REPS
# runs; COUNT_FILTER turns the command's stdout into its violation count.
declare -A secs
timed() {
    local label=$1 filter=$2
    shift 2
    local ts=() rss=0 t0 t1 r count
    for _ in $(seq "$reps"); do
        t0=$(now)
        /usr/bin/time -v "$@" >"$work/out" 2>"$work/time" || true
        t1=$(now)
        ts+=("$(echo "$t1 - $t0" | bc)")
        r=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time")
        [ "$r" -gt "$rss" ] && rss=$r
    done
    count=$($filter <"$work/out")
    if [ "$count" != "$expected" ]; then
        echo "$label: counted $count violations, $expected planted" >&2
        cat "$work/out" "$work/time" >&2
        exit 1
    fi
    local med
    med=$(printf '%s\n' "${ts[@]}" | median)
    secs[$label]=$med
    awk -v l="$label" -v t="$med" -v b="$bytes" -v r="$rss" \
        'BEGIN { printf "| %s | %.3f | %.2f | %d |\n", l, t, b / t / 1e9, r / 1024 }'
}
json_count() {
    "$py" -c 'import json, sys; print(sum(c["violations"] for c in json.load(sys.stdin)["checks"] if c["rule"] == "index"))'
}
plain() { tail -1; }

echo "# Token shards: $tokens uint16 tokens ($(awk -v b="$bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }')), $threads threads, median of $reps, $(nproc) cores"
echo
echo "| run | median s | GB/s | peak RSS MB |"
echo "|---|---:|---:|---:|"
timed "preflight, raw stream" json_count "$bin" check -s "$work/s.yaml" -j "$threads" --format json "$dir/stream.bin"
timed "preflight, raw stream, eod_id (documents)" json_count "$bin" check -s "$work/eod.yaml" -j "$threads" --format json "$dir/stream.bin"
timed "preflight, Megatron dataset" json_count "$bin" check -s "$work/s.yaml" -j "$threads" --format json "$dir/megatron/data.bin"
# What users write: np.memmap(...).max(), then (a >= V).sum().
timed "NumPy: a.max() and (a >= V).sum()" plain "$py" -c \
    'import numpy as np, sys; a = np.memmap(sys.argv[1], np.uint16, "r"); print(int(a.max())); print(int((a >= 50257).sum()))' \
    "$dir/stream.bin"
timed "NumPy: (a >= V).sum() alone" plain "$py" -c \
    'import numpy as np, sys; a = np.memmap(sys.argv[1], np.uint16, "r"); print(int((a >= 50257).sum()))' \
    "$dir/stream.bin"

# The memory-scan ceiling, as limits.sh measures it (section (b)).
gcc -O3 -march=native -pthread -o "$work/memscan" "$memscan_c"
scan=$("$work/memscan" 100000000 "$threads" 9)
# The plain range kernel (its first line) is the ceiling compared with.
ceiling=$(echo "$scan" | head -1 | tr ' ' '\n' | awk -F= '$1 == "median_GBps" { print $2 }')
echo
echo '```'
echo "$scan"
echo '```'
echo
awk -v b="$bytes" -v raw="${secs["preflight, raw stream"]}" -v meg="${secs["preflight, Megatron dataset"]}" \
    -v np2="${secs["NumPy: a.max() and (a >= V).sum()"]}" -v np1="${secs["NumPy: (a >= V).sum() alone"]}" -v c="$ceiling" 'BEGIN {
    printf "- raw stream: %.2fx the NumPy one-liner (max + sum), %.2fx the sum alone; %.0f%% of the memory-scan rate (%.2f of %.2f GB/s)\n",
        np2 / raw, np1 / raw, 100 * b / raw / 1e9 / c, b / raw / 1e9, c
    printf "- Megatron dataset: %.2fx the NumPy one-liner (max + sum), %.2fx the sum alone; %.0f%% of the memory-scan rate (%.2f of %.2f GB/s)\n",
        np2 / meg, np1 / meg, 100 * b / meg / 1e9 / c, b / meg / 1e9, c
}'
