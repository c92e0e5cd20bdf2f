"""Exact validation on Ray: Ray tasks over planned units of work, and a
``ray.data`` step for data that is already a Ray Dataset.
"""

from __future__ import annotations

from typing import Optional

import pyarrow as pa

from . import SPLIT_BYTES, Merged, Validator, merge, plan


def _check_units(validator: Validator, units: list) -> str:
    return validator.check_unit(units)


def check(
    paths=None,
    schema="preflight.yaml",
    *,
    max_examples: int = 5,
    split_bytes: int = SPLIT_BYTES,
    tasks: Optional[int] = None,
) -> Merged:
    """Checks ``paths`` (or the schema's ``dataset.files``) with Ray tasks
    (``ray.remote``) on the connected cluster (``ray.init()`` first); returns
    the merged report, byte for byte that of one ``preflight check``."""
    import ray

    validator = Validator(schema, max_examples)
    units = plan(paths, schema if paths is None else None, split_bytes)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    n = tasks or max(1, min(len(units), cpus * 4))
    remote = ray.remote(_check_units)
    shared = ray.put(validator)
    refs = [remote.remote(shared, units[i::n]) for i in range(n) if units[i::n]]
    reports = ray.get(refs)
    return merge(reports or [validator.check_unit([])])


def check_dataset(
    dataset,
    schema="preflight.yaml",
    *,
    max_examples: int = 5,
    path_column: str = "path",
    row_column: Optional[str] = None,
) -> Merged:
    """Checks a ``ray.data.Dataset`` with a ``map_batches`` step. Counts and
    the exit decision are exact. Examples name each row's source file when
    the dataset has ``path_column`` (``read_parquet(..., include_paths=True)``)
    and its row within that file when ``row_column`` holds it; otherwise
    rows are positions within each batch."""
    validator = Validator(schema, max_examples)

    def step(batch: pa.Table) -> pa.Table:
        parts = []
        paths = batch.column(path_column).to_pylist() if path_column in batch.column_names else None
        rows = batch.column(row_column).to_pylist() if row_column and row_column in batch.column_names else None
        start = 0
        while start < batch.num_rows:
            end = start + 1
            if paths is not None:
                # A run of rows from one file, with consecutive row numbers.
                while end < batch.num_rows and paths[end] == paths[start] and (
                    rows is None or rows[end] == rows[end - 1] + 1
                ):
                    end += 1
            else:
                end = batch.num_rows
            source = paths[start] if paths is not None else "<ray.data>"
            first = rows[start] if rows is not None else start
            parts.append(validator.check_partial(batch.slice(start, end - start), source, first))
            start = end
        if not parts:
            parts.append(validator.check_unit([]))
        return pa.table({"partial": [merge(parts).partial_json]})

    reports = [r["partial"] for r in dataset.map_batches(step, batch_format="pyarrow").take_all()]
    return merge(reports or [validator.check_unit([])])
