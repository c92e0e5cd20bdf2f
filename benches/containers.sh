#!/usr/bin/env bash
# Sharded containers (#15): a WebDataset shard set and a TFRecord set of
# SIZE_MB each (default 2048, the issue's 2 GB), checked by preflight on
# BENCH_THREADS threads (default 2) beside the Python loop users write to
# look at their labels: `webdataset` iteration reading `cls`, and the
# `tfrecord` package's reader reading `image/class/label`. Whole processes,
# wall clock, warm page cache (each run once before it is timed); the
# ratio is Python's time over preflight's.
#
#   PREFLIGHT_BIN=target/release/preflight BENCH_PY=target/test-venv/bin/python \
#       bash benches/containers.sh [SIZE_MB] [WORK_DIR]
#
# Samples are ImageNet-like: SAMPLE_BYTES (default 110000) of image bytes and
# a label; shards of about 256 MB. Every 1000th label is out of range, so
# both sides must find the same count (checked: a mismatch fails the run).
set -euo pipefail
bin=${PREFLIGHT_BIN:-target/release/preflight}
py=${BENCH_PY:-target/test-venv/bin/python}
threads=${BENCH_THREADS:-2}
size_mb=${1:-2048}
work=${2:-$(mktemp -d)}
sample=${SAMPLE_BYTES:-110000}
mkdir -p "$work/wds" "$work/tfr"

"$py" - "$work" "$size_mb" "$sample" <<'EOF'
import os, sys
import webdataset as wds
from tfrecord import TFRecordWriter
work, size_mb, sample = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = max(1, size_mb * 2**20 // (sample + 1024))
per_shard = max(1, (256 * 2**20) // (sample + 1024))
blob = os.urandom(sample)
def label(i):
    return 1000 + i if i % 1000 == 999 else i % 1000
if not os.listdir(os.path.join(work, "wds")):
    w = None
    for i in range(n):
        if i % per_shard == 0:
            if w: w.close()
            w = wds.TarWriter(os.path.join(work, "wds", "train-%05d.tar" % (i // per_shard)))
        w.write({"__key__": "%08d" % i, "jpg": blob, "cls": label(i)})
    w.close()
if not os.listdir(os.path.join(work, "tfr")):
    w = None
    for i in range(n):
        if i % per_shard == 0:
            if w: w.close()
            w = TFRecordWriter(os.path.join(work, "tfr", "train-%05d.tfrecord" % (i // per_shard)))
        w.write({"image/encoded": (blob, "byte"), "image/class/label": (label(i), "int")})
    w.close()
print("samples per set:", n, file=sys.stderr)
EOF

printf 'version: 1\ncolumns:\n  cls: {kind: class, num_classes: 1000}\n' >"$work/wds.yaml"
printf 'version: 1\ncolumns:\n  image/class/label: {kind: class, num_classes: 1000}\n' >"$work/tfr.yaml"
cat >"$work/wds_loop.py" <<'EOF'
import glob, sys
import webdataset as wds
bad = 0
for s in wds.WebDataset(sorted(glob.glob(sys.argv[1] + "/*.tar")), shardshuffle=False):
    c = int(s["cls"])
    if not 0 <= c < 1000:
        bad += 1
print(bad)
EOF
cat >"$work/tfr_loop.py" <<'EOF'
import glob, sys
from tfrecord.reader import tfrecord_loader
bad = 0
for path in sorted(glob.glob(sys.argv[1] + "/*.tfrecord")):
    for r in tfrecord_loader(path, None, {"image/class/label": "int"}):
        c = int(r["image/class/label"][0])
        if not 0 <= c < 1000:
            bad += 1
print(bad)
EOF

secs() { # command... -> wall seconds of one warm run (stdout kept in $work/out)
    "$@" >"$work/out" 2>/dev/null || true
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >"$work/out" 2>/dev/null || true
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
violations() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['violations'])" "$work/out"; }

echo "| set | size | preflight -j $threads (s) | Python loop (s) | ratio |"
echo "|---|---:|---:|---:|---:|"
for set in wds tfr; do
    pf=$(secs "$bin" check -s "$work/$set.yaml" -j "$threads" --format json --no-progress "$work/$set")
    pf_bad=$(violations)
    loop=$(secs "$py" "$work/${set}_loop.py" "$work/$set")
    loop_bad=$(cat "$work/out")
    if [ "$pf_bad" != "$loop_bad" ]; then
        echo "MISMATCH on $set: preflight $pf_bad, Python $loop_bad" >&2
        exit 1
    fi
    mb=$(du -sm "$work/$set" | cut -f1)
    printf '| %s | %d MB | %.3f | %.3f | %.1fx |\n' "$set" "$mb" "$pf" "$loop" "$(echo "$loop / $pf" | bc -l)"
done
