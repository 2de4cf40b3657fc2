"""The real clients researchers load releases with: RobustBench 1.1.1, torchvision, Hugging Face
``datasets``, ``webdataset`` (setup.py's ``test`` extra installs them).

Two facts of the environment, handled here rather than skipped:

- PyPI's torchvision Linux wheel is a CUDA build; beside a CPU build of torch its C extension does
  not load and registering its operators fails ("operator torchvision::nms does not exist").
  Declaring the schemas of ``torchvision::nms`` and ``torchvision::qnms`` first is enough for
  ``torchvision.datasets`` and ``torchvision.transforms``. Beside PyPI's CUDA build of torch (the
  only one some machines get) the extension loads and declares them itself, and declaring them
  first would abort the process: whether it loads is asked of a Python of its own first.
- RobustBench's wheel imports ``autoattack`` but depends on ``pyautoattack``, the same code under
  another name; the module is aliased.
"""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


def _declare_torchvision_ops() -> None:
    import torch

    library = torch.library.Library("torchvision", "DEF")  # noqa: the library must outlive the call
    for schema in ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
                   "qnms(Tensor qdets, Tensor qscores, float iou_threshold) -> Tensor"):
        try:
            library.define(schema)
        except RuntimeError:  # a torchvision build whose extension loaded declares them itself
            pass
    _LIBRARIES.append(library)


_LIBRARIES: list = []


def _torchvision_imports_alone() -> bool:
    """Whether ``import torchvision`` works in a fresh interpreter (its C extension loads beside
    this torch and declares its own operators)."""
    return subprocess.run([sys.executable, "-c", "import torchvision"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def torchvision():
    """The ``torchvision`` module (datasets and transforms usable on a CPU or a CUDA torch)."""
    if "torchvision" not in sys.modules and not _torchvision_imports_alone():
        _declare_torchvision_ops()
    return importlib.import_module("torchvision")


@pytest.fixture(scope="session")
def robustbench_data(torchvision):
    """``robustbench.data`` of RobustBench 1.1.1, unchanged."""
    sys.modules.setdefault("autoattack", importlib.import_module("pyautoattack"))
    sys.modules.setdefault("autoattack.state", importlib.import_module("pyautoattack.state"))
    return importlib.import_module("robustbench.data")
