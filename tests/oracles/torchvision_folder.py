"""torchvision's own `ImageFolder` listing: `find_classes`, `make_dataset`
and `IMG_EXTENSIONS`, taken from the installed package's
`datasets/folder.py` and run as they are (importing torchvision would import
PyTorch, which the test venv never installs; run-tests.sh installs
torchvision with --no-deps)."""
import ast
import importlib.util
import os
from pathlib import Path
from typing import Any, Callable, Optional, Union, cast


def _load():
    root = importlib.util.find_spec("torchvision").submodule_search_locations[0]
    with open(os.path.join(root, "datasets", "folder.py"), encoding="utf-8") as f:
        src = f.read()
    wanted = {"has_file_allowed_extension", "find_classes", "make_dataset", "IMG_EXTENSIONS"}
    ns = {"os": os, "Path": Path, "Any": Any, "Callable": Callable, "Optional": Optional,
          "Union": Union, "cast": cast}
    found = set()
    for n in ast.parse(src).body:
        name = n.name if isinstance(n, ast.FunctionDef) else (
            n.targets[0].id if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) else None)
        if name in wanted:
            code = "from __future__ import annotations\n" + ast.get_source_segment(src, n)
            exec(compile(code, "torchvision/datasets/folder.py", "exec"), ns)
            found.add(name)
    assert found == wanted, f"torchvision's folder.py lacks {wanted - found}"
    return ns


_ns = _load()
IMG_EXTENSIONS = _ns["IMG_EXTENSIONS"]
find_classes = _ns["find_classes"]
make_dataset = _ns["make_dataset"]
