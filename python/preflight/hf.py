"""A Hugging Face ``Trainer`` callback that checks the whole train and eval
datasets against the model's bounds before the first step::

    from preflight.hf import PreflightCallback

    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=val,
                      processing_class=tokenizer, callbacks=[PreflightCallback()])
    trainer.train()        # raises preflight.DataError before step 1 on bad data

The bounds come from the live model and tokenizer
(:func:`preflight.torch.from_model`) unless a validator is given. The check
reads each dataset once, never through the training loader, so the
sampler's order and RNG are untouched.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Optional

from transformers import Trainer, TrainerCallback

from . import Validator
from .torch import _Bounds, check_whole

__all__ = ["PreflightCallback"]


class PreflightCallback(_Bounds, TrainerCallback):
    """Checks the train and eval datasets at ``on_train_begin``.

    - ``validator``: the schema to check with; default: the bounds of the
      trainer's model and ``processing_class`` (``from_model``), with
      ``columns`` and ``loss`` passed on to it.
    - ``check``: ``"start"`` (the whole datasets before step 1),
      ``"every_batch"`` (each batch's samples in the train loader's collate
      function, in its workers) or ``"both"``.
    - ``eval_dataset``: checked too; default: the trainer's own.
    - ``jobs``: scanner threads for Arrow-backed datasets (0: all cores).
    """

    def __init__(
        self,
        validator: Optional[Validator] = None,
        *,
        check: str = "start",
        columns: Optional[Mapping[str, Any]] = None,
        loss: Any = None,
        eval_dataset: Any = None,
        jobs: int = 0,
        max_examples: int = 5,
    ):
        if check not in ("start", "every_batch", "both"):
            raise ValueError(f"check={check!r}: expected 'start', 'every_batch' or 'both'")
        super().__init__(validator, columns, loss, None, jobs, max_examples)
        self.check = check
        self.eval_dataset = eval_dataset

    def on_train_begin(self, args, state, control, model=None, processing_class=None, train_dataloader=None, **kwargs):
        # An image processor has no length: only a tokenizer bounds ids.
        validator = self._validator_for(model, processing_class if hasattr(processing_class, "__len__") else None)
        if self.check in ("start", "both"):
            if train_dataloader is not None:
                check_whole(validator, train_dataloader.dataset, "train", self.jobs)
            evals = self.eval_dataset if self.eval_dataset is not None else _trainer_eval_dataset()
            if isinstance(evals, Mapping):
                for name, ds in evals.items():
                    check_whole(validator, ds, f"eval {name}", self.jobs)
            elif evals is not None:
                check_whole(validator, evals, "eval", self.jobs)
        if self.check in ("every_batch", "both") and train_dataloader is not None:
            # accelerate's prepared loader iterates the loader it wraps.
            loader = getattr(train_dataloader, "base_dataloader", train_dataloader)
            loader.collate_fn = validator.wrap_collate(loader.collate_fn)
        return control


def _trainer_eval_dataset() -> Any:
    """The ``eval_dataset`` of the Trainer whose ``train`` called the hook:
    callbacks are not handed the trainer, and its eval loader does not exist
    yet at ``on_train_begin``."""
    frame = inspect.currentframe()
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, Trainer):
            return owner.eval_dataset
        frame = frame.f_back
    return None
