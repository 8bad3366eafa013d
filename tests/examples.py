"""Load a module of examples/ by name, so that tests exercise the kernels the examples show."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def load(name: str) -> ModuleType:
    """examples/NAME.py, imported once per process (as ``cuforge_example_NAME``)."""
    key = f"cuforge_example_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(EXAMPLES, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[key] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[key]
