"""Bounds from the live model: a :class:`preflight.Validator` whose limits
come from the ``torch.nn.Module`` being trained, not from a schema kept in
step with it by hand::

    import preflight.torch

    validator = preflight.torch.from_model(model, tokenizer=tokenizer)
    print(validator.resolved_schema())      # a schema to commit, with sources
    loader = DataLoader(ds, collate_fn=validator.wrap_collate())

The embedding's rows are read after any ``resize_token_embeddings``, so ids
added to the tokenizer without a resize are caught. torch is imported only
when :func:`from_model` is called.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from . import DataError, SchemaError, Validator, merge

__all__ = ["from_model", "check_whole"]


class _Bounds:
    """What the training callbacks share: the validator they were given, or
    one made from the model they are handed, and the scanner's threads."""

    def __init__(self, validator, columns, loss, tokenizer, jobs, max_examples):
        self.validator = validator
        self.columns = columns
        self.loss = loss
        self.tokenizer = tokenizer
        self.jobs = jobs
        self.max_examples = max_examples

    def _validator_for(self, model: Any, tokenizer: Any = None) -> Validator:
        if self.validator is not None:
            return self.validator
        return from_model(
            model,
            loss=self.loss,
            tokenizer=self.tokenizer if tokenizer is None else tokenizer,
            columns=self.columns,
            max_examples=self.max_examples,
        )

#: The token-type table of Hugging Face models.
_TOKEN_TYPE_NAMES = ("token_type_embeddings",)
#: Learned absolute position tables: BERT-likes, GPT-2, OPT/BART.
_POSITION_NAMES = ("position_embeddings", "wpe", "embed_positions")


def from_model(
    model: Any,
    *,
    loss: Any = None,
    tokenizer: Any = None,
    columns: Optional[Mapping[str, Any]] = None,
    max_examples: int = 5,
) -> Validator:
    """A validator for the inputs ``model`` takes, its bounds read from it.

    - ``input_ids``: the input embedding's rows (``get_input_embeddings()``,
      after any resize), and at most the position table's length when the
      model has a learned absolute one (RoBERTa's counts non-pad tokens,
      positions starting at ``padding_idx + 1``; RoPE, ALiBi and relative
      models have none, and no length limit).
    - ``token_type_ids``: the token-type table's rows.
    - ``position_ids``: the position table's rows.
    - ``attention_mask``: 0 or 1.
    - ``labels``: a sequence or token classification head's classes
      (``config.num_labels``), else a language model's output rows; values
      equal to the loss's ``ignore_index`` (``loss.ignore_index`` when a
      ``CrossEntropyLoss``/``NLLLoss`` is given, else -100) pass.

    ``columns`` names or overrides any column: ``{"my_ids": model.embed}``
    (an ``nn.Embedding``: an id column of its rows; an ``nn.Linear``: a class
    column of its outputs) or ``{"y": 10}`` (a number: an id column for names
    ending in ``ids``, else a class column). ``tokenizer``: ``len(tokenizer)``
    above the embedding's rows is a warning (tokens added without
    ``resize_token_embeddings``), a ``pad_token_id`` past them an error
    (every padded batch would crash).

    Raises :class:`preflight.SchemaError` when no column can be named, and
    :class:`TypeError` for a ``columns`` entry that is neither an embedding,
    a linear layer nor a number.
    """
    import torch.nn as nn

    names = {id(m): ("model." + n if n else "model") for n, m in model.named_modules()}

    def name_of(module: Any) -> str:
        return names.get(id(module), type(module).__name__)

    ignore_index = -100
    if loss is not None:
        if not isinstance(loss, (nn.CrossEntropyLoss, nn.NLLLoss)):
            raise TypeError(f"loss: {type(loss).__name__} is not a CrossEntropyLoss or NLLLoss")
        ignore_index = int(loss.ignore_index)
    ignore_source = "loss.ignore_index" if loss is not None else "CrossEntropyLoss's default"

    cols: dict = {}
    sources: dict = {}
    warnings: list = []

    def put(name: str, rule: dict, **srcs: str) -> None:
        cols[name] = {**rule, "optional": True}
        sources[name] = srcs

    config = getattr(model, "config", None)

    # input_ids, and the sequence length from the position table.
    embedding = _input_embedding(model, nn)
    if embedding is not None:
        rows = int(embedding.num_embeddings)
        src = f"{name_of(embedding)}.num_embeddings"
        if embedding.padding_idx is not None:
            src += f" (padding_idx {embedding.padding_idx})"
        rule = {"kind": "index", "size": rows}
        srcs = {"size": src}
        table = _named(model, _POSITION_NAMES, nn)
        if table is not None:
            positions = int(table.num_embeddings) - int(getattr(table, "offset", 0) or 0)
            where = f"{name_of(table)}.num_embeddings"
            if getattr(table, "offset", 0):
                where += f" - offset {table.offset}"
            if table.padding_idx is not None:
                # RoBERTa: position ids start after padding_idx; pads take none.
                pad = int(table.padding_idx)
                rule["max_length"] = positions - pad - 1
                rule["pad_id"] = pad
                srcs["max_length"] = f"{where} - padding_idx {pad} - 1 (non-pad tokens)"
            else:
                rule["max_length"] = positions
                srcs["max_length"] = where
        put("input_ids", rule, **srcs)
        if table is not None:
            put("position_ids", {"kind": "index", "size": int(table.num_embeddings)},
                size=f"{name_of(table)}.num_embeddings")
        if tokenizer is not None:
            _tokenizer_checks(tokenizer, rows, src, warnings)

    types = _named(model, _TOKEN_TYPE_NAMES, nn)
    if types is not None:
        put("token_type_ids", {"kind": "index", "size": int(types.num_embeddings)},
            size=f"{name_of(types)}.num_embeddings")

    if embedding is not None:
        cols["attention_mask"] = {"kind": "values", "allowed": [0, 1], "optional": True}

    labels = _labels(model, config, nn, name_of)
    if labels is not None:
        count, src = labels
        put("labels", {"kind": "class", "num_classes": count, "ignore_index": ignore_index},
            num_classes=src, ignore_index=ignore_source)

    for name, value in (columns or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, nn.Module)):
            raise TypeError(f"columns[{name!r}]: {type(value).__name__} is not an nn.Embedding, an nn.Linear or a number")
        if isinstance(value, nn.Embedding):
            put(name, {"kind": "index", "size": int(value.num_embeddings)}, size=f"{name_of(value)}.num_embeddings")
        elif isinstance(value, nn.Linear):
            put(name, {"kind": "class", "num_classes": int(value.out_features), "ignore_index": ignore_index},
                num_classes=f"{name_of(value)}.out_features", ignore_index=ignore_source)
        elif isinstance(value, nn.Module):
            raise TypeError(
                f"columns[{name!r}]: {name_of(value)} is a {type(value).__name__}, not an nn.Embedding or nn.Linear"
            )
        elif name.endswith("ids"):
            put(name, {"kind": "index", "size": int(value)}, size=f"columns[{name!r}]")
        else:
            put(name, {"kind": "class", "num_classes": int(value), "ignore_index": ignore_index},
                num_classes=f"columns[{name!r}]", ignore_index=ignore_source)

    if not cols:
        raise SchemaError(
            f"{type(model).__name__}: no input preflight can bound (no get_input_embeddings(), token-type "
            "or position table, classification head or output embedding): name the columns with "
            "columns={'name': module or number}"
        )
    return Validator._from_model(
        {"version": 1, "columns": cols}, f"<{type(model).__name__}>", max_examples, sources, warnings
    )


def _input_embedding(model: Any, nn: Any) -> Any:
    get = getattr(model, "get_input_embeddings", None)
    if get is None:
        return None
    try:
        emb = get()
    except NotImplementedError:
        return None
    return emb if isinstance(emb, nn.Embedding) else None


def _named(model: Any, names: tuple, nn: Any) -> Any:
    """The first embedding whose attribute name is one of ``names``."""
    for qualified, module in model.named_modules():
        if qualified.rsplit(".", 1)[-1] in names and isinstance(module, nn.Embedding):
            return module
    return None


def _labels(model: Any, config: Any, nn: Any, name_of: Any) -> Optional[tuple]:
    """The class count a ``labels`` column indexes, and its source."""
    kind = type(model).__name__
    if config is not None and (kind.endswith("ForSequenceClassification") or kind.endswith("ForTokenClassification")):
        n = int(getattr(config, "num_labels", 0) or 0)
        problem = getattr(config, "problem_type", None)
        # One label is regression (MSELoss); multi-label takes float targets.
        if n > 1 and problem in (None, "single_label_classification"):
            return n, "model.config.num_labels"
        return None
    get = getattr(model, "get_output_embeddings", None)
    out = get() if get is not None else None
    if isinstance(out, nn.Linear):
        return int(out.out_features), f"{name_of(out)}.out_features"
    if isinstance(out, nn.Embedding):
        return int(out.num_embeddings), f"{name_of(out)}.num_embeddings"
    return None


def _tokenizer_checks(tokenizer: Any, rows: int, source: str, warnings: list) -> None:
    size = len(tokenizer)
    if size > rows:
        warnings.append(
            f"columns.input_ids.size: the tokenizer holds ids up to {size - 1} but {source} is {rows}: "
            f"the tokenizer grew without model.resize_token_embeddings, and ids >= {rows} will crash the embedding"
        )
    pad = getattr(tokenizer, "pad_token_id", None)
    if pad is not None and int(pad) >= rows:
        raise SchemaError(
            f"the tokenizer's pad_token_id is {pad} but {source} is {rows}: every padded batch would crash "
            "the embedding (call model.resize_token_embeddings(len(tokenizer)))"
        )


def check_whole(validator: Validator, dataset: Any, name: str = "dataset", jobs: int = 0) -> None:
    """Checks every sample of ``dataset`` and raises :class:`preflight.DataError`
    (the human report as its message) when one breaks a rule; what the
    training callbacks run before the first step.

    A Hugging Face ``datasets.Dataset`` whose table is its cache files is
    read there by the Rust scanner, through its index mapping, no sample
    converted in Python; examples name the data file, its row and the
    dataset ``index``. Any other dataset (``len()`` and ``dataset[i]``:
    dict samples, or tuples whose items are the columns ``"0"``, ``"1"``...)
    is read on the CPU in batches of 1,024 samples, with a progress bar on a
    terminal; examples name ``name`` and the dataset index as the row."""
    outcome = _arrow_outcome(validator, dataset, jobs)
    if outcome is None:
        outcome = _sampled_outcome(validator, dataset, name)
    if outcome is not None and outcome.exit_code != 0:
        raise DataError(
            f"preflight: the {name} dataset breaks the model's bounds\n{outcome.human.rstrip()}",
            json.loads(outcome.json),
            outcome.exit_code,
        )


def _arrow_outcome(validator: Validator, dataset: Any, jobs: int) -> Any:
    try:
        import datasets
    except ImportError:
        return None
    if not isinstance(dataset, datasets.Dataset):
        return None
    try:
        return validator._dataset_outcome(dataset, jobs)
    except ValueError:
        return None


def _sampled_outcome(validator: Validator, dataset: Any, name: str) -> Any:
    import sys

    n = len(dataset)
    if n == 0:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    bar = tqdm(total=n, desc=f"preflight {name}", unit="sample", file=sys.stderr, disable=None) if tqdm else None
    partials = []
    for start in range(0, n, 1024):
        samples = [_as_dict(dataset[i]) for i in range(start, min(n, start + 1024))]
        partials.append(validator.check_partial(samples, source=name, first_row=start))
        if bar is not None:
            bar.update(len(samples))
    if bar is not None:
        bar.close()
    return merge(partials)


def _as_dict(sample: Any) -> Any:
    if isinstance(sample, Mapping):
        return sample
    if isinstance(sample, (tuple, list)):
        return {str(i): v for i, v in enumerate(sample)}
    raise TypeError(f"a sample is a {type(sample).__name__}: preflight checks dict or tuple samples")
