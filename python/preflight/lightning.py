"""A Lightning callback that checks the whole train and val datasets against
the model's bounds before the first step::

    from preflight.lightning import PreflightCallback

    trainer = L.Trainer(callbacks=[PreflightCallback(columns={"y": model.head})])
    trainer.fit(model, train_loader, val_loader)   # raises preflight.DataError first

Without a validator the bounds come from the LightningModule's network
(:func:`preflight.torch.from_model` on ``module.model`` when it has one,
else the module itself). The datasets are read once, never through the
loaders, so the samplers' order and RNG are untouched.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from lightning.pytorch import Callback

from . import Validator
from .torch import _Bounds, check_whole

__all__ = ["PreflightCallback"]


class PreflightCallback(_Bounds, Callback):
    """Checks the train and val dataloaders' datasets at ``on_fit_start``.

    ``validator``, ``columns``, ``loss``, ``jobs`` and ``max_examples`` are
    as for :class:`preflight.hf.PreflightCallback`.
    """

    def __init__(
        self,
        validator: Optional[Validator] = None,
        *,
        columns: Optional[Mapping[str, Any]] = None,
        loss: Any = None,
        tokenizer: Any = None,
        jobs: int = 0,
        max_examples: int = 5,
    ):
        super().__init__(validator, columns, loss, tokenizer, jobs, max_examples)

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        validator = self._validator_for(getattr(pl_module, "model", pl_module))
        sources = [
            ("train", trainer.fit_loop._data_source),
            ("val", trainer.fit_loop.epoch_loop.val_loop._data_source),
        ]
        for name, source in sources:
            if not source.is_defined():
                continue
            for i, loader in enumerate(_loaders(source.dataloader())):
                dataset = getattr(loader, "dataset", None)
                if dataset is not None:
                    check_whole(validator, dataset, name if i == 0 else f"{name} {i}", self.jobs)


def _loaders(found: Any) -> list:
    """The loaders a ``*_dataloader()`` hook or ``fit`` argument gave: one,
    or a list, tuple or dict of them."""
    if isinstance(found, Mapping):
        return [x for v in found.values() for x in _loaders(v)]
    if isinstance(found, (list, tuple)):
        return [x for v in found for x in _loaders(v)]
    return [found]
