#!/usr/bin/env bash
# Segmentation masks (#14): preflight against the scripts users write
# (PIL.Image.open + numpy.bincount, cv2.imread(IMREAD_UNCHANGED) +
# numpy.unique, each in a multiprocessing pool), whole processes, on N PNG
# masks of SIZE x SIZE (ADE20K-like, benches/masks_gen.py). Prints a
# Markdown table with seconds and peak RSS; every row must agree on the
# number of bad pixels (printed to stderr).
#
#   PREFLIGHT_BIN=target/release/preflight BENCH_PY=.venv/bin/python \
#       bash benches/masks.sh [N=20000] [SIZE=512] [FORMAT=png]
#
# FORMAT jpg writes the masks as gray JPEGs instead; the floor is then
# libjpeg-turbo decoding alone (benches/jpeg_floor.rs).
#
# cv2 is measured when the Python has it (pip install opencv-python-headless).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${PREFLIGHT_BIN:-target/release/preflight}
py=${BENCH_PY:-.venv/bin/python}
threads=${BENCH_THREADS:-2}
n=${1:-20000}
size=${2:-512}
format=${3:-png}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# MASKS_DIR keeps the generated masks between runs (with their planted
# count in MASKS_DIR/planted); without it they go in a temporary folder.
masks=${MASKS_DIR:-$work/masks}
if [ ! -f "$masks/planted" ]; then
    "$py" "$here/masks_gen.py" "$masks" "$n" "$size" "$format" >"$work/planted"
    mv "$work/planted" "$masks/planted"
fi
planted=$(cat "$masks/planted")
echo "planted bad pixels: $planted" >&2
printf 'version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 150, ignore_index: 255}\n' >"$work/s.yaml"

timed() { # label, command...
    local label=$1; shift
    local t0 t1 rss
    t0=$(date +%s.%N)
    /usr/bin/time -v "$@" >"$work/out" 2>"$work/time" || true
    t1=$(date +%s.%N)
    rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time")
    printf '| %s | %.3f | %d |\n' "$label" "$(echo "$t1 - $t0" | bc)" "$((rss / 1024))"
}

echo "| run ($n $format masks ${size}x${size}, $threads threads) | seconds | peak RSS MB |"
echo "|---|---:|---:|"
timed "preflight check" "$bin" check -s "$work/s.yaml" -j "$threads" --format json --no-progress "$masks"
"$py" -c "import json,sys; print('preflight bad pixels:', json.load(open(sys.argv[1]))['violations'])" "$work/out" >&2
timed "PIL + numpy.bincount, Pool($threads)" "$py" "$here/masks_peers.py" pil "$masks" "$threads" 150
echo "PIL bad pixels: $(cat "$work/out")" >&2
# The floor: decoding alone with the same decoder (the PNG crate, or
# libjpeg-turbo for JPEG) on the same threads.
floor_bench=png_floor
floor_label="png crate decode only (the floor)"
if [ "$format" = jpg ]; then
    floor_bench=jpeg_floor
    floor_label="libjpeg-turbo decode only (the floor)"
fi
floor=$(cargo bench --bench "$floor_bench" --no-run --message-format=json 2>/dev/null |
    "$py" -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and m["target"]["name"] == sys.argv[1]][0])' "$floor_bench" || true)
if [ -n "$floor" ]; then
    timed "$floor_label" "$floor" "$threads" "$masks"
fi
if "$py" -c "import cv2" 2>/dev/null; then
    timed "cv2.imread + numpy.unique, Pool($threads)" "$py" "$here/masks_peers.py" cv2 "$masks" "$threads" 150
    echo "cv2 bad pixels: $(cat "$work/out")" >&2
fi
