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
# BENCH_SETS (default "wds tfr") picks the sets; BENCH_REPS (default 1) times
# each command that many times and keeps the median.
#
# With FLOORS=1, the same run then measures what the machine allows over the
# TFRecord set, on the same threads: memscan.c (../shared/bench; MEMSCAN_C)
# reading as many bytes from memory, and benches/crc_floor.rs (the CRC-32C
# crate preflight uses, over the files read into memory, then memory-mapped
# as preflight reads them; CRC_FLOOR_BIN, else built with cargo bench).
set -euo pipefail
bin=${PREFLIGHT_BIN:-target/release/preflight}
py=${BENCH_PY:-target/test-venv/bin/python}
threads=${BENCH_THREADS:-2}
size_mb=${1:-2048}
work=${2:-$(mktemp -d)}
sample=${SAMPLE_BYTES:-110000}
sets=${BENCH_SETS:-wds tfr}
reps=${BENCH_REPS:-1}
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
if not os.listdir(os.path.join(work, "wds")) and "wds" in os.environ.get("BENCH_SETS", "wds tfr"):
    w = None
    for i in range(n):
        if i % per_shard == 0:
            if w: w.close()
            w = wds.TarWriter(os.path.join(work, "wds", "train-%05d.tar" % (i // per_shard)))
        w.write({"__key__": "%08d" % i, "jpg": blob, "cls": label(i)})
    w.close()
if not os.listdir(os.path.join(work, "tfr")) and "tfr" in os.environ.get("BENCH_SETS", "wds tfr"):
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

secs() { # command... -> median wall seconds of $reps warm runs (stdout kept in $work/out)
    "$@" >"$work/out" 2>/dev/null || true
    local t0 t1 i
    for i in $(seq "$reps"); do
        t0=$(date +%s.%N)
        "$@" >"$work/out" 2>/dev/null || true
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc
    done | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
violations() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['violations'])" "$work/out"; }

echo "| set | size | preflight -j $threads (s) | Python loop (s) | ratio |"
echo "|---|---:|---:|---:|---:|"
for set in $sets; do
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
    if [ "$set" = tfr ]; then tfr_loop=$loop; fi
done

if [ "${FLOORS:-0}" = 1 ]; then
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    memscan_c=${MEMSCAN_C:-$here/../../shared/bench/memscan.c}
    gcc -O3 -march=native -pthread -o "$work/memscan" "$memscan_c"
    floor=${CRC_FLOOR_BIN:-$(cargo bench --bench crc_floor --no-run --message-format=json 2>/dev/null |
        "$py" -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and m["target"]["name"] == "crc_floor"][0])')}
    bytes=$(du -cb --apparent-size "$work"/tfr/* | tail -1 | cut -f1)
    echo
    echo "Floors over the TFRecord set ($bytes bytes, $threads threads; in-process seconds, median of $reps):"
    echo
    echo "| floor | seconds | GB/s | Python loop / floor |"
    echo "|---|---:|---:|---:|"
    row() { printf '| %s | %.3f | %.2f | %.1fx |\n' "$1" "$2" "$(echo "$bytes / $2 / 10^9" | bc -l)" "$(echo "${tfr_loop:-0} / $2" | bc -l)"; }
    med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    ms=$("$work/memscan" $((bytes / 8)) "$threads" "$reps" | awk '/kernel=range /{ for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "median_s") print kv[2] } }')
    row "memscan: read as many bytes from memory (int64 range count)" "$ms"
    for mode in mem map; do
        s=$(for i in $(seq "$reps"); do "$floor" "$threads" "$work/tfr" "$mode"; done |
            sed -n 's/.* secs=\([0-9.]*\) .*/\1/p' | med)
        case $mode in
            mem) what="CRC-32C alone, files already in memory" ;;
            map) what="CRC-32C over the files memory-mapped (populate, checksum, release per 16 MiB)" ;;
        esac
        row "$what" "$s"
    done
fi
