"""Writes the quickstart's sample data (run from the repository root with a
Python that has pyarrow: target/test-venv/bin/python sample_data/make.py).

A BERT-style classification set: `label` (2 classes), `input_ids` (bert-base
vocabulary, 30522 ids, at most 512 tokens), `attention_mask` (0/1, as long as
input_ids). clean/ holds valid data; bad/ holds the same data with planted
violations, listed in PLANTED below and asserted by tests/cli/sample_data.rs.
"""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(2024)


def rows(n):
    labels = rng.integers(0, 2, n).tolist()
    ids = [[101] + rng.integers(1000, 30000, rng.integers(6, 40)).tolist() + [102] for _ in range(n)]
    mask = [[1] * len(x) for x in ids]
    return labels, ids, mask


def write(path, labels, ids, mask, row_group_size=100):
    table = pa.table({
        "label": pa.array(labels, pa.int64()),
        "input_ids": pa.array(ids, pa.list_(pa.int32())),
        "attention_mask": pa.array(mask, pa.list_(pa.int8())),
        "text_len": pa.array([len(x) for x in ids], pa.int32()),
    })
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)


for i in range(2):
    write(f"{HERE}/clean/train-{i:05d}.parquet", *rows(250))

labels, ids, mask = rows(300)
labels[17] = 2            # label == num_classes
labels[240] = -1          # a missing-label sentinel
ids[42][5] = 30522        # a token added to the tokenizer without resizing
ids[42][6] = 30523
ids[199] = [101] + [2000] * 598 + [102]   # 600 tokens: truncation missing
mask[199] = [1] * 600
mask[77][3] = 2           # not a mask value
write(f"{HERE}/bad/train-00000.parquet", labels, ids, mask)
