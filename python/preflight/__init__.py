"""preflight: catch bad training data before it reaches the GPU.

Check batches in a data pipeline against a preflight schema, exactly as
``preflight check`` checks files::

    import preflight

    validator = preflight.Validator("preflight.yaml")
    report = validator.check(batch)        # the JSON report, as a dict
    validator.validate(batch)              # raises preflight.DataError

A batch is a pyarrow ``RecordBatch`` or ``Table`` (or anything exporting the
Arrow PyCapsule interface), a pandas ``DataFrame``, a dict of columns
(NumPy arrays, lists, or anything ``numpy.asarray`` takes, such as CPU
tensors), or a list of such dicts (the samples a ``collate_fn`` receives).
Arrow data and contiguous NumPy arrays are read in place, without a copy.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Union

# numpy and pyarrow are imported where batches are converted, not here:
# the `preflight` command (preflight/__main__.py) imports this package and
# should start as fast as the binary.
from ._preflight import Merged, Outcome, SchemaError, __version__
from ._preflight import Validator as _Validator
from ._preflight import merge as _merge
from ._preflight import plan as _plan

__all__ = [
    "Validator",
    "DataError",
    "SchemaError",
    "Merged",
    "IndexedDataset",
    "plan",
    "merge",
    "to_arrow",
    "__version__",
]

#: Files at least this large are split into their units by :func:`plan`.
SPLIT_BYTES = 128 << 20


class DataError(ValueError):
    """Data that preflight rejects: the message is the human report.

    ``report`` holds the JSON report as a dict (None when the error was
    re-raised from a DataLoader worker, which passes on its message only);
    ``exit_code`` is what
    ``preflight check`` would exit with (1: violations, 2: data that could
    not be checked, such as a missing column).
    """

    def __init__(self, message: str, report: Optional[dict] = None, exit_code: int = 1):
        # report and exit_code default so that the error survives being
        # re-raised from a DataLoader worker (rebuilt from its message).
        super().__init__(message)
        self.report = report
        self.exit_code = exit_code


class Validator:
    """A preflight schema compiled once for checking many batches.

    ``schema`` is a path to a schema file (YAML, as for the CLI; relative
    model references resolve against its folder) or the schema as a dict
    (relative references resolve against the current directory).
    """

    def __init__(self, schema: Union[str, os.PathLike, Mapping], max_examples: int = 5):
        if isinstance(schema, Mapping):
            text = json.dumps(schema)
            path = "<schema dict>"
        else:
            path = os.fspath(schema)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise SchemaError(f"{path}: cannot read the schema: {e}") from e
        self._inner = _Validator(text, path, max_examples)

    @classmethod
    def _from_model(cls, schema: Mapping, path: str, max_examples: int, sources: Mapping, warnings: list) -> "Validator":
        v = cls.__new__(cls)
        v._inner = _Validator(json.dumps(schema), path, max_examples, dict(sources), list(warnings))
        return v

    @classmethod
    def _from_state(cls, state: str) -> "Validator":
        v = cls.__new__(cls)
        v._inner = _Validator.from_state(state)
        return v

    def __reduce__(self):
        # Pickled as the resolved schema: workers need neither the schema
        # file nor the model files its references point to.
        return (Validator._from_state, (self._inner.state(),))

    def outcome(self, data: Any, source: str = "<batch>", first_row: int = 0) -> Outcome:
        """The check of ``data`` with its JSON text, human text and exit code."""
        return self._inner.check(to_arrow(data), source, first_row)

    def check(self, data: Any, source: str = "<batch>", first_row: int = 0) -> dict:
        """Checks ``data`` and returns the JSON report as a dict.

        ``source`` names the data in examples; ``first_row`` is the row
        number of its first row (e.g. ``indices[0]`` in a batched
        ``datasets.map(..., with_indices=True)``), so reported rows are rows
        of the whole dataset.
        """
        return json.loads(self.outcome(data, source, first_row).json)

    def validate(self, data: Any, source: str = "<batch>", first_row: int = 0) -> Any:
        """Returns ``data`` unchanged when every rule holds; raises
        :class:`DataError` (with the human report as its message) otherwise."""
        if _passes(self._inner, data):
            return data
        out = self.outcome(data, source, first_row)
        raise DataError(out.human.rstrip("\n"), json.loads(out.json), out.exit_code)

    def mask(self, data: Any) -> Any:
        """A ``pyarrow.BooleanArray``, true for the rows of ``data`` that pass
        every rule: exactly the rows :meth:`check` reports are false. Raises
        :class:`ValueError` when no row can be judged (a required column
        missing, a column of a type its rule cannot check)."""
        return self._inner.mask(to_arrow(data))

    def filter(self, data: Any) -> Any:
        """``data`` without the rows that break a rule, in ``data``'s own
        kind: a pyarrow RecordBatch or Table, a pandas DataFrame, a dict of
        columns (NumPy arrays or lists, row-indexed) or a list of samples."""
        keep = self.mask(data)
        flags = keep.to_pylist()
        # pandas first: a DataFrame also speaks the Arrow stream protocol,
        # but its own `filter` selects columns.
        if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
            return data[flags]
        if hasattr(data, "filter") and (hasattr(data, "__arrow_c_array__") or hasattr(data, "__arrow_c_stream__")):
            return data.filter(keep)
        if isinstance(data, Mapping):
            import numpy as np

            out = {}
            for k, v in data.items():
                if isinstance(v, np.ndarray):
                    out[k] = v[np.asarray(flags, dtype=bool)]
                else:
                    out[k] = [x for x, f in zip(v, flags) if f]
            return out
        return [s for s, f in zip(data, flags) if f]

    def check_dataset(self, ds: Any, jobs: int = 0) -> dict:
        """Checks a Hugging Face ``datasets.Dataset``'s rows (``ds[i]`` for
        every ``i < len(ds)``, in order) where its cache files store them:
        its ``.arrow`` files are read through its index mapping (``filter``,
        ``shuffle``, ``sort``, ``select``, ``train_test_split``) by the Rust
        scanner, no row converted in Python. Returns the JSON report as a
        dict: each example names the data file and its row there, and the
        dataset index as ``index``. Columns dropped with ``remove_columns``
        are fine unless the schema names one. A dataset whose table is not
        whole cache files (built in memory, or a view: renamed, cast or
        schema columns dropped, a slice) raises ``ValueError``: check
        ``ds.data.table`` with :meth:`check` instead."""
        return json.loads(self._dataset_outcome(ds, jobs).json)

    def _dataset_outcome(self, ds: Any, jobs: int = 0) -> Outcome:
        from datasets.table import ConcatenationTable, MemoryMappedTable

        table = ds._data
        rows = table.blocks if isinstance(table, ConcatenationTable) else [[table]]
        blocks = [b for row in rows for b in row]
        named = set(self._inner.columns())

        def harmless(replay) -> bool:
            # Replays are what was done to the file's table: new metadata
            # changes no value, and dropped columns the schema does not name
            # (a Trainer's unused columns) are never judged anyway.
            kind, args = replay[0], replay[1]
            if kind == "replace_schema_metadata":
                return True
            return kind == "drop" and bool(args) and not named & set(args[0])

        whole = (
            blocks
            and all(len(row) == 1 for row in rows)
            and all(isinstance(b, MemoryMappedTable) and all(harmless(r) for r in b.replays) for b in blocks)
        )
        if not whole:
            raise ValueError(
                "the dataset's table is not whole cache files (built in memory, or a view: renamed, cast "
                "or schema columns dropped, a slice): check ds.data.table with Validator.check instead"
            )
        indices = None if ds._indices is None else ds._indices.table
        name = f"<dataset {ds._fingerprint}>"
        return self._inner.check_dataset([b.path for b in blocks], table.num_rows, indices, name, jobs)

    def check_partial(self, data: Any, source: str = "<batch>", first_row: int = 0) -> str:
        """:meth:`check`, as a partial report (JSON text) for :func:`merge`."""
        return self._inner.check_partial(to_arrow(data), source, first_row)

    def check_unit(self, unit: Union[Mapping, Sequence[Mapping]], jobs: int = 1) -> str:
        """Checks one unit of work from :func:`plan` (or a list of them),
        reading only that unit, and returns the partial report (JSON text)
        for :func:`merge`."""
        units = [unit] if isinstance(unit, Mapping) else list(unit)
        return self._inner.check_units(json.dumps(units), jobs)

    def wrap_collate(self, collate_fn: Optional[Callable] = None) -> Callable:
        """A ``collate_fn`` for a PyTorch ``DataLoader`` that validates each
        batch's samples before ``collate_fn`` (default: torch's
        ``default_collate``) turns them into tensors. It pickles (with the
        validator's resolved schema), so it runs in workers under every
        start method: ``fork``, ``spawn`` and ``forkserver``."""
        return _Collate(self, collate_fn)

    def resolved_schema(self) -> str:
        """The schema with every reference resolved, as YAML."""
        return self._inner.resolved_schema()


class Indexed:
    """A sample with its dataset index, as :class:`IndexedDataset` yields
    it; :meth:`Validator.wrap_collate` unwraps it, so ``collate_fn`` gets
    the plain samples."""

    __slots__ = ("index", "sample")

    def __init__(self, index: int, sample: Any):
        self.index = index
        self.sample = sample

    def __reduce__(self):
        return (Indexed, (self.index, self.sample))


class IndexedDataset:
    """``dataset`` with each sample carrying its index, so that a
    :meth:`Validator.wrap_collate` error names the dataset indices of the
    bad samples (as rows of ``<dataset>``), not their places in the batch.
    The sampler is untouched: it draws indices as it would from
    ``dataset``."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Indexed:
        return Indexed(index, self.dataset[index])


class _Collate:
    """:meth:`Validator.wrap_collate`'s function: a class, not a closure,
    so that DataLoader workers started by ``spawn`` can unpickle it."""

    def __init__(self, validator: Validator, collate_fn: Optional[Callable]):
        self.validator = validator
        self.collate_fn = collate_fn

    def __call__(self, samples):
        indices = None
        if samples and all(isinstance(s, Indexed) for s in samples):
            indices = [s.index for s in samples]
            samples = [s.sample for s in samples]
        if self.collate_fn is None:
            # torch's default_collate stacks arrays and numbers into tensors
            # holding the samples' values, read in place: stacked once.
            from torch.utils.data import default_collate

            batch = default_collate(samples)
            # Only tensors: sequences given as lists come out transposed.
            stacked = isinstance(batch, Mapping) and all(hasattr(v, "shape") for v in batch.values())
            checked = batch if stacked else samples
        else:
            batch, checked = None, samples
        if not _passes(self.validator._inner, checked):
            out = self.validator.outcome(checked, "<collate>")
            if indices is not None:
                # Rare, so paid only here: each sample again, numbered by
                # its dataset index.
                parts = [self.validator.check_partial([s], "<dataset>", i) for i, s in zip(indices, samples)]
                out = merge(parts)
            raise DataError(out.human.rstrip("\n"), json.loads(out.json), out.exit_code)
        return batch if self.collate_fn is None else self.collate_fn(samples)


def plan(
    paths: Union[None, str, os.PathLike, Sequence[Union[str, os.PathLike]]] = None,
    schema: Union[None, str, os.PathLike] = None,
    split_bytes: int = SPLIT_BYTES,
) -> list:
    """The units of work of a check over ``paths`` (files, directories,
    globs; with none, the ``dataset.files`` of the ``schema`` file): one per
    file, and one per row group (Parquet) or record batch (Arrow IPC file)
    of files of at least ``split_bytes`` bytes. Each unit is a small dict,
    for an engine to spread over workers and :meth:`Validator.check_unit`
    to check."""
    if paths is None:
        paths = []
    elif isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    schema_path = None if schema is None else os.fspath(schema)
    return json.loads(_plan([os.fspath(p) for p in paths], schema_path, split_bytes))


def merge(reports: Sequence[Union[str, Mapping]]) -> Merged:
    """Merges partial reports (from :meth:`Validator.check_unit`,
    :meth:`Validator.check_partial`, ``preflight check --format json
    --partial``, or an earlier merge's ``partial_json``), in any order and
    grouping, into the report of the whole: ``.json`` is byte for byte what
    ``preflight check --format json`` prints over the same data;
    ``.exit_code`` its exit status; ``.partial_json`` merges further."""
    texts = [r if isinstance(r, str) else json.dumps(r) for r in reports]
    return _merge(texts)


def to_arrow(data: Any) -> Any:
    """Arrow data for ``data`` (see the module's docs for what is accepted)."""
    import pyarrow as pa

    if hasattr(data, "__arrow_c_array__") or hasattr(data, "__arrow_c_stream__"):
        return data
    if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, Mapping):
        names = [str(k) for k in data]
        return pa.record_batch([_column(v) for v in data.values()], names=names)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)) and data and isinstance(data[0], Mapping):
        keys = list(data[0].keys())
        for i, sample in enumerate(data):
            if not isinstance(sample, Mapping) or list(sample.keys()) != keys:
                raise TypeError(f"sample {i} does not have the keys of sample 0 ({keys})")
        return to_arrow({k: _stack([s[k] for s in data]) for k in keys})
    raise TypeError(
        "expected a pyarrow RecordBatch or Table, a pandas DataFrame, a dict of columns "
        f"or a list of sample dicts, got {type(data).__name__}"
    )


def _passes(inner: Any, data: Any) -> bool:
    """Whether every rule holds on ``data``. A dict of NumPy arrays and CPU
    tensors (a collated batch) is offered to the Rust half to read in place,
    with no pyarrow call; what it declines (see ``python/src/numpy.rs``),
    and everything else, goes through :func:`to_arrow`."""
    if isinstance(data, Mapping):
        arrays = [_column_np(v) if type(v).__module__ == "torch" else v for v in data.values()]
        verdict = inner.passes_numpy(list(map(str, data)), arrays)
        if verdict is not None:
            return verdict
    return inner.passes(to_arrow(data))


def _column(values: Any) -> Any:
    """One Arrow array for a column: NumPy arrays of any rank (rank >= 2 as
    fixed-size lists of each row's elements, as the CLI reads .npy files),
    Arrow arrays, lists (ragged lists become list arrays)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if not isinstance(values, (list, tuple, np.ndarray)):
        values = _column_np(values)
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "O":
            return pa.array(list(values))
        # A masked array's masked elements are nulls (checked by `null`).
        if isinstance(values, np.ma.MaskedArray):
            mask, data = np.ma.getmaskarray(values), np.ma.getdata(values)
        else:
            mask, data = None, values
        if data.ndim == 0:
            data = data.reshape(1)
            mask = None if mask is None else mask.reshape(1)
        if data.ndim == 1:
            return pa.array(data, mask=mask)
        width = math.prod(data.shape[1:])
        if width == 0:
            # Rows of no elements (Arrow has no fixed-size list of size 0).
            return pa.ListArray.from_arrays(np.zeros(len(data) + 1, np.int32), pa.array(data.reshape(-1)))
        flat = np.ascontiguousarray(data).reshape(-1)
        flat_mask = None if mask is None else np.ascontiguousarray(mask).reshape(-1)
        return pa.FixedSizeListArray.from_arrays(pa.array(flat, mask=flat_mask), width)
    return pa.array(list(values))


def _stack(values: list) -> Any:
    """A column from the samples' values: NumPy stacks when every value is an
    array of one shape, else the list as is (ragged sequences)."""
    import numpy as np

    if values and all(hasattr(v, "shape") or hasattr(v, "__array__") for v in values):
        arrays = [v if isinstance(v, np.ndarray) else _column_np(v) for v in values]
        if len({a.shape for a in arrays}) == 1:
            return np.stack(arrays)
        return [a.tolist() for a in arrays]
    return values


def _column_np(v: Any) -> Any:
    """A NumPy array for an array-like: a CPU tensor is read in place (no
    copy, autograd left); a tensor on another device is refused rather than
    copied back, which would synchronise the device every batch."""
    device = getattr(v, "device", None)
    if device is not None and getattr(device, "type", "cpu") != "cpu":
        raise ValueError(
            f"a tensor on {device}: preflight reads CPU tensors only, without a copy; "
            "check the batch before it is moved to the device (in the DataLoader's collate_fn)"
        )
    if getattr(v, "requires_grad", False):
        v = v.detach()
    if type(v).__module__ == "torch":
        return v.numpy()
    import numpy as np

    return np.asarray(v)
