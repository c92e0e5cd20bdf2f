"""preflight in the training loop beside what users write instead, each pair
in the same process and the same minute. Run it with a release wheel in the
test venv (`maturin build --release --zig`, then pip install it): the
tests' wheel (python/tests/wheel.sh) is built at opt-level 1, whose kernels
are not vectorised.

    target/test-venv/bin/python benches/training.py [WORK_DIR]

1. batch: one batch of 32 x 2048 int64 input_ids, token_type_ids,
   attention_mask and labels as CPU tensors: `validator.validate(batch)`
   against the torch expressions of the same rules
   (`((x < 0) | (x >= V)).any()` per tensor, the mask in {0, 1}, labels in
   range or -100, and the length). Median of REPS (default 200) after a
   warm-up, the two alternated.
2. epoch: a DataLoader over an in-memory tokenized dataset (EPOCH_ROWS
   samples of 512 ids, default 20,000; batch 32; 2 persistent workers,
   fork), with `wrap_collate()` and without, each loader warmed by one
   epoch; median of EPOCHS (default 32) epochs each, in ABBA order; CPU of
   the main process and the workers (read from /proc). Twice: rows of a
   NumPy array (the leanest loader there is), and a Hugging Face
   datasets.Dataset in memory in numpy format; then the NumPy case once
   more with no guard on either side (A/A), the spread of the method
   itself. Under the table: the median of the guarded / plain ratio of
   each pair of adjacent epochs, with a 95% bootstrap interval. Beside it,
   the guard's own CPU per batch of that case (REPS x 10 batches in this
   process).
3. start: the whole-dataset check a training callback runs at its start, on
   a datasets.Dataset of START_ROWS rows (default 2,000,000) of 64 int32 ids,
   labels and masks in its cache file: `validator.check_dataset(ds)` against
   a batched NumPy check over `ds.with_format("numpy").iter(10_000)`; both
   must count the same violations (planted: 3 ids, 2 labels, 1 mask value).
   Median of 3 alternated runs.

Prints one Markdown table; exits 1 if a count differs.
"""

import os
import resource
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

import preflight

V, TYPES, CLASSES, MAXLEN = 30522, 2, 30522, 2048


def schema(max_length):
    return {
        "version": 1,
        "columns": {
            "input_ids": {"kind": "index", "size": V, "max_length": max_length},
            "token_type_ids": {"kind": "index", "size": TYPES, "optional": True},
            "attention_mask": {"kind": "values", "allowed": [0, 1]},
            "labels": {"kind": "class", "num_classes": CLASSES, "ignore_index": -100},
        },
    }


#: The rules of the epoch and start cases: 512-token rows, a binary label.
ROWS_SCHEMA = {
    "version": 1,
    "columns": {
        "input_ids": {"kind": "index", "size": V, "max_length": 512},
        "attention_mask": {"kind": "values", "allowed": [0, 1]},
        "labels": {"kind": "class", "num_classes": 2},
    },
}


def torch_check(b, max_length):
    x, t, m, y = b["input_ids"], b["token_type_ids"], b["attention_mask"], b["labels"]
    bad = bool(((x < 0) | (x >= V)).any())
    bad |= bool(((t < 0) | (t >= TYPES)).any())
    bad |= bool(((m != 0) & (m != 1)).any())
    bad |= bool((((y < 0) & (y != -100)) | (y >= CLASSES)).any())
    bad |= x.shape[1] > max_length
    return bad


def alternated(a, b, reps):
    ta, tb = [], []
    for _ in range(reps):
        for f, acc in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            f()
            acc.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def bench_batch(reps):
    g = torch.Generator().manual_seed(0)
    batch = {
        "input_ids": torch.randint(0, V, (32, MAXLEN), generator=g),
        "token_type_ids": torch.randint(0, TYPES, (32, MAXLEN), generator=g),
        "attention_mask": torch.ones(32, MAXLEN, dtype=torch.int64),
        "labels": torch.randint(0, CLASSES, (32, MAXLEN), generator=g),
    }
    v = preflight.Validator(schema(MAXLEN))
    assert not torch_check(batch, MAXLEN)
    v.validate(batch)
    ours, theirs = alternated(lambda: v.validate(batch), lambda: torch_check(batch, MAXLEN), reps)
    return ("batch: 32 x 2048, 4 tensors", "torch expressions", theirs, ours)


class Tokenized(torch.utils.data.Dataset):
    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.ids = rng.integers(0, V, (n, 512))
        self.labels = rng.integers(0, 2, n)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": np.ones(512, dtype=np.int64), "labels": self.labels[i]}


def bench_epoch(rows, hf=False, guard=True):
    import multiprocessing

    data = Tokenized(rows)
    if hf:
        import datasets

        data = datasets.Dataset.from_dict(
            {"input_ids": data.ids, "attention_mask": np.ones_like(data.ids), "labels": data.labels}
        ).with_format("numpy")
    v = preflight.Validator(ROWS_SCHEMA)
    ctx = multiprocessing.get_context("fork")

    def loader(collate):
        # Persistent workers, as a training run keeps them: an epoch is the
        # batches, not two worker processes started and reaped.
        return torch.utils.data.DataLoader(
            data, batch_size=32, num_workers=2, multiprocessing_context=ctx, collate_fn=collate, persistent_workers=True
        )

    # guard=False: the same loader on both sides (A/A), which shows what
    # the method reads from noise alone.
    loaders = {True: loader(v.wrap_collate() if guard else None), False: loader(None)}
    walls, cpus = {True: [], False: []}, {True: [], False: []}

    def epoch(guarded):
        l = loaders[guarded]
        before = cpu_seconds() + workers_cpu(l)
        t0 = time.perf_counter()
        n = sum(b["input_ids"].shape[0] for b in l)
        walls[guarded].append(time.perf_counter() - t0)
        cpus[guarded].append(cpu_seconds() + workers_cpu(l) - before)
        assert n == rows

    for guarded in (True, False):
        epoch(guarded)  # starts the workers
        walls[guarded].clear()
        cpus[guarded].clear()
    # Pairs of adjacent epochs in ABBA order: a drift of the machine's speed
    # falls on both epochs of a pair alike.
    for i in range(int(os.environ.get("EPOCHS", 32))):
        for guarded in (True, False) if i % 2 == 0 else (False, True):
            epoch(guarded)
    del loaders
    kind = "a datasets.Dataset in memory (numpy format)" if hf else "NumPy rows"
    case = f"epoch: DataLoader over {kind}, {rows:,} x 512, 2 persistent workers"
    if not guard:
        case += " (A/A: no guard on either side)"
    med = statistics.median
    paired = []
    for name, runs in (("wall", walls), ("CPU", cpus)):
        ratios = [g / p for g, p in zip(runs[True], runs[False])]
        low, high = median_interval(ratios)
        paired.append(f"{case}, {name}: guarded / plain per pair of epochs, median {med(ratios):.3f} "
                      f"(95% interval {low:.3f}-{high:.3f}, {len(ratios)} pairs)")
    rows = [
        (case + ", wall", "no guard", med(walls[False]), med(walls[True])),
        (case + ", CPU (main and workers)", "no guard", med(cpus[False]), med(cpus[True])),
    ]
    return rows, paired


def median_interval(xs, resamples=10_000):
    """A 95% bootstrap interval of the median of xs (a fixed seed, so a
    run's numbers are reproducible from its samples)."""
    rng = np.random.default_rng(0)
    meds = np.median(rng.choice(np.asarray(xs), (resamples, len(xs))), axis=1)
    return float(np.quantile(meds, 0.025)), float(np.quantile(meds, 0.975))


def workers_cpu(loader):
    """CPU seconds of a loader's live worker processes (from /proc)."""
    it = getattr(loader, "_iterator", None)
    total = 0.0
    for w in getattr(it, "_workers", None) or []:
        try:
            with open(f"/proc/{w.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def bench_guard(reps):
    """The guard's own work per batch of the epoch case (32 x 512 ids, mask
    and labels as collated tensors), CPU time in this process."""
    from torch.utils.data import default_collate

    data = Tokenized(64)
    samples = [data[i] for i in range(32)]
    guard = preflight.Validator(ROWS_SCHEMA).wrap_collate()
    guard(samples)
    t0 = time.process_time()
    for _ in range(reps):
        guard(samples)
    guarded = (time.process_time() - t0) / reps
    t0 = time.process_time()
    for _ in range(reps):
        default_collate(samples)
    plain = (time.process_time() - t0) / reps
    return ("a batch of the epoch case, `wrap_collate()` (CPU per batch)", "`default_collate` alone", plain, guarded)


def cpu_seconds():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bench_start(work, rows):
    import datasets
    import pyarrow as pa

    datasets.disable_progress_bars()
    path = os.path.join(work, f"start-{rows}")
    if not os.path.exists(path):
        rng = np.random.default_rng(1)
        ids = rng.integers(0, V, (rows, 64), dtype=np.int32)
        labels = rng.integers(0, 2, rows)
        mask = np.ones((rows, 64), dtype=np.int8)
        ids[[11, rows // 2, rows - 1], [0, 5, 63]] = [V, -1, V + 7]
        labels[[123, rows - 2]] = [2, -1]
        mask[rows // 3, 7] = 2
        table = pa.table(
            {
                "input_ids": pa.ListArray.from_arrays(pa.array(np.arange(0, rows * 64 + 1, 64, dtype=np.int32)), pa.array(ids.reshape(-1))),
                "attention_mask": pa.ListArray.from_arrays(pa.array(np.arange(0, rows * 64 + 1, 64, dtype=np.int32)), pa.array(mask.reshape(-1))),
                "labels": labels,
            }
        )
        datasets.Dataset(table).save_to_disk(path)
    ds = datasets.load_from_disk(path)
    v = preflight.Validator(ROWS_SCHEMA)

    def ours():
        return v.check_dataset(ds)["violations"]

    def numpy_check():
        bad = 0
        for b in ds.with_format("numpy").iter(batch_size=10_000):
            x, m, y = b["input_ids"], b["attention_mask"], b["labels"]
            bad += int(((x < 0) | (x >= V)).sum()) + int(((m != 0) & (m != 1)).sum())
            bad += int(((y < 0) | (y >= 2)).sum())
            lengths = np.array([len(r) for r in x]) if x.dtype == object else np.full(len(x), x.shape[1])
            bad += int((lengths > 512).sum())
        return bad

    counts = (ours(), numpy_check())
    if counts[0] != counts[1] or counts[0] != 6:
        print(f"start: counts differ: preflight {counts[0]}, numpy {counts[1]} (planted 6)", file=sys.stderr)
        sys.exit(1)
    t_ours, t_numpy = alternated(ours, numpy_check, 3)
    return (f"start: datasets.Dataset, {rows:,} rows x 64 ids", "batched NumPy over with_format('numpy')", t_numpy, t_ours)


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="preflight-training-")
    os.makedirs(work, exist_ok=True)
    batch = [bench_batch(int(os.environ.get("REPS", 200))), bench_guard(int(os.environ.get("REPS", 200)) * 10)]
    epoch_rows = int(os.environ.get("EPOCH_ROWS", 20_000))
    epochs = [bench_epoch(epoch_rows), bench_epoch(epoch_rows, hf=True), bench_epoch(epoch_rows, guard=False)]
    rows = [
        *batch,
        *(row for case, _ in epochs for row in case),
        bench_start(work, int(os.environ.get("START_ROWS", 2_000_000))),
    ]
    print(f"torch {torch.__version__}, preflight {preflight.__version__}, {os.cpu_count()} CPUs")
    print()
    print("| case | instead | their s | preflight s | ratio |")
    print("|---|---|---:|---:|---:|")
    for case, peer, theirs, ours in rows:
        # Seconds, to four significant digits (a batch takes microseconds).
        print(f"| {case} | {peer} | {theirs:.4g} | {ours:.4g} | {theirs / ours:.2f}x |")
    print()
    for _, paired in epochs:
        for line in paired:
            print(f"- {line}")


if __name__ == "__main__":
    main()
