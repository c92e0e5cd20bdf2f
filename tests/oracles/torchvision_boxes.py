"""torchvision's own judgement of a detection target's boxes: the
conversions `box_convert` makes (`_box_xywh_to_xyxy`, `_box_cxcywh_to_xyxy`
in ops/_box_convert.py) and the degenerate-box test of
`GeneralizedRCNN.forward` (`degenerate_boxes = ...` in
models/detection/generalized_rcnn.py), taken from the installed package's
source and run on NumPy arrays of the dtype `torch.tensor` gives the
values (int64 when every value is a whole Python int, else float32).
Importing torchvision would import PyTorch, which the test venv never
installs (run-tests.sh installs torchvision with --no-deps)."""
import ast
import importlib.util
import os

import numpy as np


class _Tensor(np.ndarray):
    """The few tensor methods the taken code calls."""

    def unbind(self, dim):
        return tuple(np.moveaxis(self, dim, 0).view(_Tensor))

    def any(self, dim=None):
        return np.ndarray.any(self, axis=dim)


class _Torch:
    Tensor = _Tensor

    @staticmethod
    def stack(xs, dim=0):
        return np.stack(xs, axis=dim).view(_Tensor)


def _source(rel):
    root = importlib.util.find_spec("torchvision").submodule_search_locations[0]
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


_ns = {"torch": _Torch, "Tensor": _Tensor}
_src = _source("ops/_box_convert.py")
_convert = {"_box_xywh_to_xyxy", "_box_cxcywh_to_xyxy"}
for _n in ast.parse(_src).body:
    if isinstance(_n, ast.FunctionDef) and _n.name in _convert:
        _code = "from __future__ import annotations\n" + ast.get_source_segment(_src, _n)
        exec(compile(_code, "torchvision/ops/_box_convert.py", "exec"), _ns)
assert _convert <= set(_ns), f"torchvision's _box_convert.py lacks {_convert - set(_ns)}"
_src = _source("models/detection/generalized_rcnn.py")
_DEGENERATE = next(
    ast.get_source_segment(_src, n.value)
    for n in ast.walk(ast.parse(_src))
    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "degenerate_boxes"
)


def _tensor(boxes):
    whole = all(type(v) is int for b in boxes for v in b)
    with np.errstate(over="ignore"):
        return np.array(boxes, dtype=np.int64 if whole else np.float32).view(_Tensor)


def rejects(box, fmt="xywh"):
    """Whether a detection model in training raises on `box` (a list of
    four numbers in `fmt`) as a target: torchvision's degenerate-box test
    after its conversion to corners. NaN passes that test (it trains into
    NaN losses); the caller judges finiteness."""
    b = _tensor([box])
    xyxy = b if fmt == "xyxy" else _ns[f"_box_{fmt}_to_xyxy"](b)
    return bool(eval(_DEGENERATE, {}, {"boxes": xyxy}).any())


def finite(box):
    """Whether every number stays finite in the tensor torch makes."""
    return bool(np.isfinite(_tensor([box]).astype(np.float64)).all())
