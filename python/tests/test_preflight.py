"""The Python package against real pyarrow, NumPy, pandas and datasets data
with planted violations: exact counts and rows, the exception and its
message, and the same report as the CLI on the same file."""

import json
import os
import resource
import subprocess

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import preflight

SCHEMA = {
    "version": 1,
    "columns": {
        "label": {"kind": "class", "num_classes": 4},
        "input_ids": {"kind": "index", "size": 1000, "max_length": 8},
    },
}


def hits(report, column, rule):
    check = next(c for c in report["checks"] if c["column"] == column and c["rule"] == rule)
    return check["violations"], [(e["file"], e["row"], e["value"]) for e in check["examples"]]


def planted(n=500, bad_rows=(7, 123, 400)):
    """Labels and ragged token ids; bad label, id and length at `bad_rows`."""
    label = np.arange(n, dtype=np.int64) % 4
    ids = [[(i * 7 + k) % 1000 for k in range(1 + i % 8)] for i in range(n)]
    for r in bad_rows:
        label[r] = 4
        ids[r] = ids[r][:2] + [1000]
    ids[bad_rows[0]] = list(range(9))
    return label, ids


def test_record_batch_exact_counts_and_rows():
    label, ids = planted()
    batch = pa.record_batch({"label": pa.array(label), "input_ids": pa.array(ids, pa.list_(pa.int32()))})
    report = preflight.Validator(SCHEMA).check(batch, source="train.arrow")
    assert report["ok"] is False
    assert report["rows"] == 500
    assert hits(report, "label", "class") == (3, [("train.arrow", 7, 4), ("train.arrow", 123, 4), ("train.arrow", 400, 4)])
    assert hits(report, "input_ids", "index") == (2, [("train.arrow", 123, 1000), ("train.arrow", 400, 1000)])
    assert hits(report, "input_ids", "max_length") == (1, [("train.arrow", 7, 9)])
    assert report["violations"] == 6


def test_clean_data_passes_and_validate_returns_it():
    label, ids = np.arange(100) % 4, [[1, 2, 3]] * 100
    data = {"label": label, "input_ids": ids}
    v = preflight.Validator(SCHEMA)
    assert v.check(data)["ok"] is True
    assert v.validate(data) is data


def test_table_chunks_and_first_row_offset():
    label, ids = planted()
    table = pa.Table.from_batches(
        pa.table({"label": label, "input_ids": pa.array(ids, pa.list_(pa.int64()))}).to_batches(max_chunksize=64)
    )
    assert table.column("label").num_chunks > 5
    report = preflight.Validator(SCHEMA).check(table, source="shard-3", first_row=10_000)
    assert hits(report, "label", "class")[1] == [("shard-3", 10_007, 4), ("shard-3", 10_123, 4), ("shard-3", 10_400, 4)]


def test_dict_of_numpy_arrays_every_dtype():
    v = preflight.Validator({"columns": {"y": {"kind": "class", "num_classes": 10}}})
    for dtype in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
        y = (np.arange(1000) % 10).astype(dtype)
        y[[3, 500, 999]] = 10
        assert hits(v.check({"y": y}), "y", "class")[0] == 3, dtype
    y = (np.arange(100) % 10).astype("float32")
    y[5] = 2.5
    y[6] = np.nan
    report = v.check({"y": y})
    assert hits(report, "y", "not_integer") == (2, [("<batch>", 5, 2.5), ("<batch>", 6, "NaN")])


def test_two_dimensional_numpy_ids_are_rows_of_elements():
    ids = np.tile(np.arange(16, dtype=np.int64), (50, 1))
    ids[9, 15] = 1000
    ids[30, 0] = -1
    v = preflight.Validator({"columns": {"input_ids": {"kind": "index", "size": 1000, "max_length": 16}}})
    report = v.check({"input_ids": ids})
    assert hits(report, "input_ids", "index") == (2, [("<batch>", 9, 1000), ("<batch>", 30, -1)])
    assert hits(report, "input_ids", "max_length")[0] == 0
    too_long = preflight.Validator({"columns": {"input_ids": {"kind": "index", "size": 1000, "max_length": 8}}})
    assert hits(too_long.check({"input_ids": ids}), "input_ids", "max_length")[0] == 50


def test_numpy_is_read_in_place_not_copied():
    y = np.zeros(8_000_000, dtype=np.int64)  # 64 MB
    y[7_999_999] = 5
    v = preflight.Validator({"columns": {"y": {"kind": "class", "num_classes": 4}}})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = v.check({"y": y})
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert hits(report, "y", "class") == (1, [("<batch>", 7_999_999, 5)])
    assert grown_kb < 16_000, f"peak memory grew by {grown_kb} KB for a 64 MB array"


def test_numpy_batches_read_in_place_give_the_arrow_verdict():
    """``validate`` hands a dict of plain arrays to Rust without pyarrow
    (``passes_numpy``); what it cannot take as it is (booleans, strided
    views, masked arrays, an empty row width) it declines, and the verdict
    is then pyarrow's. Either way it is the verdict of the full check."""
    from preflight import to_arrow

    v = preflight.Validator(
        {
            "columns": {
                "y": {"kind": "class", "num_classes": 10, "ignore_index": -100},
                "ids": {"kind": "index", "size": 1000, "max_length": 16},
            }
        }
    )
    inner = v._inner
    rng = np.random.default_rng(0)

    def verdicts(batch):
        fast = inner.passes_numpy(list(batch), list(batch.values()))
        return fast, inner.passes(to_arrow(batch)), v.check(batch)["ok"]

    base = rng.integers(0, 1000, (64, 16))
    for dtype in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]:
        # A byte cannot hold the vocabulary's ids (a schema error of its
        # own): ids are then int16.
        ids = base.astype(dtype if dtype not in ("int8", "uint8") else "int16")
        y = (np.arange(64) % 10).astype(dtype)
        assert verdicts({"y": y, "ids": ids}) == (True, True, True), dtype
        for column, row, value in [("y", 5, 10), ("ids", 63, 1000), ("ids", 0, 999.5), ("y", 0, -1)]:
            bad = {"y": y.copy(), "ids": ids.copy()}
            if (bad[column].dtype.kind in "iu" and value != int(value)) or (bad[column].dtype.kind == "u" and value < 0):
                continue
            flat = bad[column].reshape(-1)
            flat[row] = value
            expected = value >= (10 if column == "y" else 1000) or value != int(value) or value == -1
            assert verdicts(bad) == (not expected,) * 3, (dtype, column, value)
    y = np.full(64, -100, dtype=np.int64)
    assert verdicts({"y": y, "ids": base}) == (True, True, True)
    y[3] = -1
    assert verdicts({"y": y, "ids": base}) == (False, False, False)
    big = np.full(64, 2**63 + 5, dtype=np.uint64)
    assert verdicts({"y": big, "ids": base}) == (False, False, False)
    # Rank 3 is a row of 16 elements; a 17-wide row breaks max_length.
    assert verdicts({"y": np.zeros(64, np.int64), "ids": base.reshape(64, 4, 4)}) == (True, True, True)
    assert verdicts({"y": np.zeros(64, np.int64), "ids": rng.integers(0, 1000, (64, 17))}) == (False, False, False)
    # A 0-d array is one row; an offset view is taken in place.
    labels = preflight.Validator({"columns": {"y": {"kind": "class", "num_classes": 10}}})._inner
    assert labels.passes_numpy(["y"], [np.array(3)]) is True
    assert labels.passes_numpy(["y"], [np.array(10)]) is False
    assert labels.passes_numpy(["y"], [np.arange(20)[10:]]) is False
    assert labels.passes_numpy(["y"], [np.arange(20)[:10]]) is True
    # Declined, and judged through pyarrow instead.
    declined = [
        {"y": np.ones(64, dtype=bool), "ids": base},
        {"y": (np.arange(128) % 10)[::2], "ids": base},
        {"y": np.zeros(64, np.int64), "ids": base[:, ::2]},
        {"y": np.zeros(64, np.int64), "ids": np.asfortranarray(base)},
        {"y": np.ma.masked_array(np.zeros(64, np.int64), mask=np.arange(64) == 3), "ids": base},
        {"y": np.zeros(64, np.int64), "ids": np.zeros((64, 0), np.int64)},
        {"y": np.zeros(64, np.float16), "ids": base},
    ]
    for batch in declined:
        fast, arrow, ok = verdicts(batch)
        assert fast is None and arrow == ok, batch
    assert labels.passes_numpy(["y"], [np.zeros(64, np.int64).astype(">i8")]) is None
    # Columns of different lengths are declined too (the check reports them).
    assert inner.passes_numpy(["y", "ids"], [np.zeros(3, np.int64), base]) is None
    # The array may be a temporary: the batch keeps it alive while it is read.
    assert labels.passes_numpy(["y"], [np.arange(1_000_000) % 10]) is True
    assert labels.passes_numpy(["y"], [np.arange(1_000_000) % 11]) is False
    assert v.validate({"y": np.arange(64) % 10, "ids": base})["y"][3] == 3
    torch = pytest.importorskip("torch")
    tensors = {"y": torch.arange(64) % 10, "ids": torch.from_numpy(base)}
    assert v.validate(tensors) is tensors
    tensors["ids"][7, 7] = 1000
    with pytest.raises(preflight.DataError, match="1000"):
        v.validate(tensors)


def test_validate_raises_data_error_with_the_human_report():
    label, ids = planted()
    v = preflight.Validator(SCHEMA, max_examples=2)
    with pytest.raises(preflight.DataError) as info:
        v.validate({"label": label, "input_ids": ids}, source="train")
    message = str(info.value)
    assert message.splitlines()[0] == (
        "error[class]: column `label`: 3 values violate 0 <= v < 4 (num_classes), or v == -100 (ignore_index)"
    )
    assert "  --> train:7: 4\n  --> train:123: 4\n  ... and 1 more" in message
    assert message.endswith("FAILED: 6 violations in 3 checks: 1 file, 500 rows")
    assert info.value.exit_code == 1
    assert info.value.report["violations"] == 6


def test_missing_column_is_an_incomplete_check():
    v = preflight.Validator(SCHEMA)
    with pytest.raises(preflight.DataError) as info:
        v.validate({"label": np.zeros(3, dtype=np.int64)})
    assert info.value.exit_code == 2
    assert "column `input_ids` is missing" in str(info.value)


def test_pandas_and_sample_lists():
    v = preflight.Validator({"columns": {"label": {"kind": "class", "num_classes": 2}, "text": {"kind": "values", "allowed": ["a", "b"]}}})
    df = pd.DataFrame({"label": [0, 1, 2, 1], "text": ["a", "b", "c", "a"]})
    report = v.check(df)
    assert hits(report, "label", "class")[0] == 1
    assert hits(report, "text", "values") == (1, [("<batch>", 2, "c")])
    samples = [{"label": np.int64(1), "text": "a"}, {"label": np.int64(3), "text": "b"}]
    assert hits(v.check(samples), "label", "class") == (1, [("<batch>", 1, 3)])


def test_collate_wrapper_checks_samples_before_collating():
    v = preflight.Validator({"columns": {"input_ids": {"kind": "index", "size": 100}, "label": {"kind": "class", "num_classes": 3}}})
    collated = []

    def collate(samples):
        collated.append(len(samples))
        return {k: np.stack([s[k] for s in samples]) for k in samples[0]}

    collate_fn = v.wrap_collate(collate)
    good = [{"input_ids": np.array([1, 2, 3]), "label": 0}, {"input_ids": np.array([4, 5, 6]), "label": 2}]
    out = collate_fn(good)
    assert out["input_ids"].shape == (2, 3) and collated == [2]
    bad = good + [{"input_ids": np.array([7, 100, 9]), "label": 1}]
    with pytest.raises(preflight.DataError, match=r"<collate>:2: 100"):
        collate_fn(bad)
    assert collated == [2], "a rejected batch is never collated"


def test_datasets_map_batched_step():
    datasets = pytest.importorskip("datasets")
    label, ids = planted(n=3000, bad_rows=(2500,))
    ds = datasets.Dataset.from_dict({"label": label.tolist(), "input_ids": ids})
    v = preflight.Validator(SCHEMA)

    def check(batch, indices):
        return v.validate(batch, source="train", first_row=indices[0])

    clean = ds.select(range(2000))
    assert clean.map(check, batched=True, batch_size=256, with_indices=True).num_rows == 2000
    with pytest.raises(preflight.DataError) as info:
        ds.map(check, batched=True, batch_size=256, with_indices=True)
    assert "  --> train:2500: 4" in str(info.value)
    assert info.value.report["violations"] == 2  # the label and the length of row 2500
    # The same step on NumPy-formatted batches.
    fixed = datasets.Dataset.from_dict({"label": label.tolist()}).with_format("numpy")
    v_label = preflight.Validator({"columns": {"label": {"kind": "class", "num_classes": 4}}})
    with pytest.raises(preflight.DataError, match=r"train:2500: 4"):
        fixed.map(lambda b, i: v_label.validate(b, source="train", first_row=i[0]), batched=True, with_indices=True)


def test_same_report_as_the_cli(tmp_path):
    binary = os.environ.get("PREFLIGHT_BIN")
    if not binary:
        pytest.skip("PREFLIGHT_BIN is set by run-tests.sh")
    label, ids = planted(n=5000, bad_rows=(1, 2222, 4999))
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"label": label, "input_ids": ids}), path, row_group_size=700)
    schema = tmp_path / "s.yaml"
    schema.write_text(json.dumps(SCHEMA))
    cli = subprocess.run(
        [binary, "check", "-s", str(schema), "--format", "json", str(path)], capture_output=True, text=True
    )
    assert cli.returncode == 1
    ours = preflight.Validator(str(schema)).check(pq.read_table(path), source=str(path))
    assert ours == json.loads(cli.stdout)


def test_schema_errors_and_unknown_objects():
    with pytest.raises(preflight.SchemaError, match="num_classes"):
        preflight.Validator({"columns": {"y": {"kind": "class"}}})
    with pytest.raises(preflight.SchemaError, match="cannot read the schema"):
        preflight.Validator("/nonexistent/preflight.yaml")
    with pytest.raises(TypeError, match="expected a pyarrow RecordBatch"):
        preflight.Validator(SCHEMA).check(42)


def test_masked_numpy_elements_are_nulls():
    v = preflight.Validator({"columns": {"y": {"kind": "class", "num_classes": 10}}})
    y = np.ma.masked_array(np.arange(6) % 10, mask=[0, 1, 0, 0, 1, 0])
    assert hits(v.check({"y": y}), "y", "null") == (2, [("<batch>", 1, None), ("<batch>", 4, None)])
    ids = np.ma.masked_array(np.zeros((3, 4), dtype=np.int64))
    ids[2, 3] = np.ma.masked
    v2 = preflight.Validator({"columns": {"ids": {"kind": "index", "size": 5}}})
    assert hits(v2.check({"ids": ids}), "ids", "null") == (1, [("<batch>", 2, None)])


def test_mask_and_filter_drop_exactly_the_reported_rows_of_every_batch_type():
    label, ids = planted(bad_rows=(7, 123, 400))
    ids[42] = [None, 3]  # a null id: the null rule drops the row too
    keep = [i not in (7, 42, 123, 400) for i in range(500)]
    batch = pa.record_batch({"label": pa.array(label), "input_ids": pa.array(ids, pa.list_(pa.int32()))})
    v = preflight.Validator(SCHEMA)
    mask = v.mask(batch)
    assert isinstance(mask, pa.BooleanArray) and mask.to_pylist() == keep
    # Across the batches of a table, rows in order.
    table = pa.Table.from_batches([batch.slice(0, 100), batch.slice(100)])
    assert v.mask(table).to_pylist() == keep
    kept = v.filter(table)
    assert isinstance(kept, pa.Table) and kept.equals(table.filter(pa.array(keep)))
    assert v.check(kept)["ok"] is True
    assert v.filter(batch).num_rows == 496
    df = batch.to_pandas()
    assert v.filter(df).index.tolist() == [i for i in range(500) if keep[i]]
    cols = {"label": label, "input_ids": ids}
    got = v.filter(cols)
    assert got["label"].tolist() == [int(x) for i, x in enumerate(label) if keep[i]]
    assert got["input_ids"] == [x for i, x in enumerate(ids) if keep[i]]
    samples = [{"label": int(label[i]), "input_ids": ids[i]} for i in range(500)]
    assert v.filter(samples) == [s for s, k in zip(samples, keep) if k]
    with pytest.raises(ValueError, match="input_ids"):
        v.mask({"label": label})


def test_datasets_filter_recipe():
    """The README's recipe: Dataset.filter(batched=True) with the mask."""
    datasets = pytest.importorskip("datasets")
    label, ids = planted()
    ds = datasets.Dataset.from_dict({"label": label.tolist(), "input_ids": ids})
    v = preflight.Validator(SCHEMA)
    clean = ds.filter(lambda batch: v.mask(batch).to_pylist(), batched=True, batch_size=64)
    assert len(clean) == 497
    assert v.check(clean.flatten_indices().data.table)["ok"] is True
    fast = ds.with_format("arrow").filter(lambda t: v.mask(t).to_pylist(), batched=True)
    assert len(fast) == 497


def test_check_dataset_reads_a_datasets_dataset_through_its_mapping(tmp_path):
    """A `datasets.Dataset` after filter, shuffle, sort, select (its mapping
    in memory) and train_test_split: the rows judged are ``ds[i]``, in
    order, each example naming the data file, its row and the index."""
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    data = tmp_path / "data.jsonl"
    with open(data, "w") as f:
        for i in range(500):
            f.write(json.dumps({"label": 7 if i in (3, 20, 41, 350) else i % 4, "input_ids": [i % 1000]}) + "\n")
    v = preflight.Validator({"version": 1, "columns": {"label": {"kind": "class", "num_classes": 4}}}, max_examples=100)
    ds = datasets.load_dataset("json", data_files=str(data), cache_dir=str(tmp_path / "c"), split="train")
    cases = {
        "plain": ds,
        "filter": ds.filter(lambda e: e["input_ids"][0] % 5 != 0),
        "shuffle": ds.shuffle(seed=1),
        "sort": ds.sort("label"),
        "select": ds.select([41, 0, 3, 3, 499]),
        "split": ds.train_test_split(test_size=0.3, seed=0)["test"],
        "slice": ds.shuffle(seed=2).select(range(100, 400)),
        # A column the schema does not name dropped (as a Trainer drops
        # what its model does not take): still the cache file's rows.
        "dropped": ds.shuffle(seed=3).remove_columns(["input_ids"]),
    }
    for name, d in cases.items():
        order = d._indices.column("indices").to_pylist() if d._indices is not None else list(range(len(d)))
        want = [(d.cache_files[0]["filename"], order[i], i, d[i]["label"]) for i in range(len(d)) if d[i]["label"] >= 4]
        r = v.check_dataset(d, jobs=2)
        assert r["rows"] == len(d), name
        check = next(c for c in r["checks"] if c["rule"] == "class")
        assert check["violations"] == len(want), name
        assert [(e["file"], e["row"], e["index"], e["value"]) for e in check["examples"]] == want, name
    assert cases["filter"].num_rows < ds.num_rows
    # Not whole cache files: refused, never judged as something else.
    named = preflight.Validator({"version": 1, "columns": {"input_ids": {"kind": "index", "size": 1000}}})
    with pytest.raises(ValueError, match="not whole cache files"):
        named.check_dataset(ds.remove_columns(["input_ids"]))
    for view in [ds.rename_column("label", "y"), datasets.Dataset.from_dict({"label": [9]})]:
        with pytest.raises(ValueError, match="not whole cache files"):
            v.check_dataset(view)
