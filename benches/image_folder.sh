#!/usr/bin/env bash
# ImageFolder listing (#15): `preflight check` on a torchvision ImageFolder
# tree (`dataset: {layout: image_folder}`) against the os.scandir-based
# torchvision logic (find_classes + make_dataset of folder.py, v0.20-0.25,
# copied: torchvision needs torch). Whole processes, warm page cache (each
# command runs once before it is timed), /usr/bin/time -v for peak RSS.
#
#   PREFLIGHT_BIN=target/release/preflight bash benches/image_folder.sh [FILES] [CLASSES]
#
# FILES defaults to 1,000,000 empty image files (no image is ever opened by
# either side), spread over CLASSES (default 1,000) class folders. Both sides
# must agree on the sample count, which is printed.
set -euo pipefail
bin=${PREFLIGHT_BIN:-target/release/preflight}
files=${1:-1000000}
classes=${2:-1000}
py=${BENCH_PY:-python3}
threads=${BENCH_THREADS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$py" - "$work/tree" "$files" "$classes" <<'EOF'
import os, sys
root, files, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
exts = [".jpg", ".JPEG", ".png"]
for c in range(classes):
    os.makedirs(os.path.join(root, f"n{c:08d}"), exist_ok=True)
for i in range(files):
    c = i % classes
    open(os.path.join(root, f"n{c:08d}", f"img_{i:08d}{exts[i % 3]}"), "wb").close()
EOF

cat >"$work/folder.py" <<'EOF'
import os, sys
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
def find_classes(directory):
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    return classes, {c: i for i, c in enumerate(classes)}
def make_dataset(directory, class_to_idx):
    instances = []
    for target_class in sorted(class_to_idx.keys()):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if path.lower().endswith(IMG_EXTENSIONS):
                    instances.append((path, class_index))
    return instances
classes, idx = find_classes(sys.argv[1])
samples = make_dataset(sys.argv[1], idx)
# What a training script does next: the labels, checked against the head.
bad = sum(1 for _, t in samples if not 0 <= t < len(classes))
print(len(samples), bad)
EOF
printf 'version: 1\ndataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: %d}\n' "$classes" >"$work/s.yaml"

timed() { # label, command...
    local label=$1; shift
    "$@" >"$work/out" 2>/dev/null || true # warm the page cache
    local t0 t1 rss
    t0=$(date +%s.%N)
    /usr/bin/time -v "$@" >"$work/out" 2>"$work/time" || true
    t1=$(date +%s.%N)
    rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$work/time")
    printf '| %s | %.3f | %d |\n' "$label" "$(echo "$t1 - $t0" | bc)" "$((rss / 1024))"
}

echo "| ImageFolder, $files files in $classes classes | seconds | peak RSS MB |"
echo "|---|---:|---:|"
timed "torchvision find_classes + make_dataset (Python, os.scandir)" "$py" "$work/folder.py" "$work/tree"
echo "python samples, bad: $(cat "$work/out")" >&2
timed "preflight check, $threads threads" "$bin" check -s "$work/s.yaml" -j "$threads" --format json "$work/tree"
"$py" -c "import json, sys; r = json.load(open(sys.argv[1])); print('preflight files, rows, ok:', r['files'], r['rows'], r['ok'])" "$work/out" >&2
