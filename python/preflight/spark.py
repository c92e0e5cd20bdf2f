"""Exact validation of a sharded dataset on Spark.

The driver plans the units of work (files, and row groups of large Parquet
files), Spark tasks check them with the Python package (each reads only its
units) and return partial reports, and the driver merges them: the result is
byte for byte the report of one ``preflight check`` over the same files.
"""

from __future__ import annotations

from typing import Optional

from . import SPLIT_BYTES, Merged, Validator, merge, plan


def check(
    spark,
    paths=None,
    schema="preflight.yaml",
    *,
    max_examples: int = 5,
    split_bytes: int = SPLIT_BYTES,
    partitions: Optional[int] = None,
) -> Merged:
    """Checks ``paths`` (or the schema's ``dataset.files``) against
    ``schema`` on a ``SparkSession`` or ``SparkContext``; returns the merged
    report (``.json``, ``.exit_code``, ``.human``). Data paths must be
    readable from the executors; the schema is resolved once on the driver
    and shipped with the tasks."""
    validator = Validator(schema, max_examples)
    units = plan(paths, schema if paths is None else None, split_bytes)
    sc = getattr(spark, "sparkContext", spark)
    slices = partitions or max(1, min(len(units), sc.defaultParallelism * 4))

    def check_partition(part):
        part = list(part)
        if part:
            yield validator.check_unit(part)

    reports = sc.parallelize(units, slices).mapPartitions(check_partition).collect()
    return merge(reports or [validator.check_unit([])])
