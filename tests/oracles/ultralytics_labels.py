"""ultralytics' own reading of YOLO label files and dataset names.

The functions are taken from the installed ultralytics package's source
(`verify_image_label`, `segments2boxes` and its helpers, `check_class_names`,
`img2label_paths`, `IMG_FORMATS` and `BaseDataset.get_img_files`) and run as
they are: importing the package would import PyTorch, which the
test venv never installs (run-tests.sh installs ultralytics with --no-deps).
The image part of `verify_image_label`, and downloads, fonts and settings
in `check_det_dataset`, are stubbed: these tests judge labels and names.
"""
import ast
from collections import abc
from itertools import repeat
from numbers import Number
import glob
import importlib.util
import logging
import os
import textwrap
import types
import zipfile
from pathlib import Path
from tarfile import is_tarfile

import numpy as np
import yaml


def _functions(rel, names):
    root = importlib.util.find_spec("ultralytics").submodule_search_locations[0]
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        src = f.read()
    found = {}
    body = ast.parse(src).body
    # `Class.method`: the method, as a plain function taking `self`.
    body += [(c.name, m) for c in body if isinstance(c, ast.ClassDef) for m in c.body]
    for n in body:
        if isinstance(n, tuple) and isinstance(n[1], ast.FunctionDef) and f"{n[0]}.{n[1].name}" in names:
            found[f"{n[0]}.{n[1].name}"] = textwrap.dedent(ast.get_source_segment(src, n[1], padded=True))
        elif isinstance(n, tuple):
            continue
        elif isinstance(n, ast.ClassDef) and n.name in names:
            found[n.name] = ast.get_source_segment(src, n)
        elif isinstance(n, ast.FunctionDef) and n.name in names:
            found[n.name] = ast.get_source_segment(src, n)
        elif isinstance(n, ast.Assign) and any(getattr(t, "id", None) in names for t in n.targets):
            found[n.targets[0].id] = ast.get_source_segment(src, n)
    assert set(found) == set(names), f"ultralytics/{rel} lacks {set(names) - set(found)}"
    return found


def _yaml_load(file, append_filename=False):
    with open(file, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    return {**data, "yaml_file": str(file)} if append_filename else data


_ns = {"np": np, "os": os, "abc": abc, "repeat": repeat, "Number": Number, "Path": Path, "zipfile": zipfile, "is_tarfile": is_tarfile,
       "torch": types.SimpleNamespace(Tensor=type("Tensor", (), {})),
       "check_image": lambda im_file: ("", (64, 64)),
       "check_file": lambda file, hard=True: file, "YAML": types.SimpleNamespace(load=_yaml_load),
       "emojis": lambda s: s, "LOGGER": logging.getLogger("ultralytics"), "clean_url": lambda u: u,
       "DATASETS_DIR": Path("/nonexistent/datasets"), "SETTINGS_FILE": "settings.json",
       "check_font": lambda font: None, "is_ascii": lambda s: True, "glob": glob,
       "HELP_URL": "", "FORMATS_HELP_MSG": "", "check_file_speeds": lambda files, prefix="": None}
for _rel, _names in [("utils/ops.py", ["empty_like", "xyxy2xywh", "segments2boxes", "xywh2xyxy", "xywh2ltwh",
                                     "xyxy2ltwh", "ltwh2xywh", "ltwh2xyxy", "resample_segments"]),
                     ("utils/instance.py", ["_ntuple", "_formats", "Bboxes", "Instances"]),
                     ("data/utils.py", ["verify_image_label", "check_det_dataset", "DATASET_KEY_TYPES",
                                        "img2label_paths", "IMG_FORMATS"]),
                     ("data/base.py", ["BaseDataset.get_img_files"]),
                     ("nn/autobackend.py", ["check_class_names"])]:
    for _name, _code in _functions(_rel, _names).items():
        exec(compile("from __future__ import annotations\n" + _code, f"ultralytics/{_rel}", "exec"), _ns)
check_class_names = _ns["check_class_names"]
img2label_paths = _ns["img2label_paths"]
IMG_FORMATS = _ns["IMG_FORMATS"]
segments2boxes = _ns["segments2boxes"]


def label_verdict(lb_file, nc=80, kpt_shape=None):
    """(why ultralytics drops the file as corrupt or None, the (N, 5) labels it
    trains on or None, how many duplicate lines it removed); with kpt_shape
    (keypoints, dims), as the pose task reads it."""
    nkpt, ndim = kpt_shape or (0, 0)
    r = _ns["verify_image_label"](("img.jpg", lb_file, "", kpt_shape is not None, nc, nkpt, ndim, False))
    if r[0] is None:
        return r[-1].split("ignoring corrupt image/label: ", 1)[1], None, 0
    msg = r[-1]
    dups = int(msg.split(": ")[-1].split(" duplicate")[0]) if "duplicate labels removed" in msg else 0
    return None, r[1], dups


def zero_area_rows(lb, w=640, h=480):
    """The rows of the (N, 5) labels ultralytics trains on whose box its
    training augmentations drop for having no area: `Instances` in pixels
    (denormalised, as `Mosaic` holds them), `remove_zero_area_boxes`."""
    inst = _ns["Instances"](np.asarray(lb, dtype=np.float32)[:, 1:5].copy(), bbox_format="xywh", normalized=True)
    inst.convert_bbox(format="xyxy")
    inst.denormalize(w, h)
    return [int(i) for i in np.flatnonzero(~inst.remove_zero_area_boxes())]


def dataset_classes(yaml_file):
    """The class count ultralytics' `check_det_dataset` gives a dataset YAML
    (its `train`/`val` folders must exist), or the exception it raises."""
    try:
        return len(_ns["check_det_dataset"](yaml_file, autodownload=False)["names"])
    except Exception as e:  # noqa: BLE001 - what refuses the dataset
        return e


def dataset_label_files(img_path):
    """The label files a YOLO dataset of `img_path` (a folder, an image list
    `.txt`, or a list of them, as `data.yaml` gives a split) opens: its
    images as `BaseDataset.get_img_files` lists them, through
    `img2label_paths`, those that exist (a missing one is an image without
    objects)."""
    ims = _ns["get_img_files"](types.SimpleNamespace(prefix="", fraction=1.0), img_path)
    return sorted(lb for lb in img2label_paths(ims) if os.path.isfile(lb))


def split_dirs(yaml_file):
    """The `train`/`val`/`test` entries of a dataset YAML as
    `check_det_dataset` resolves them (each a path or a list)."""
    data = _ns["check_det_dataset"](yaml_file, autodownload=False)
    return {k: data[k] for k in ("train", "val", "test") if data.get(k)}
