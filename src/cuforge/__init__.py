"""cuforge: CUDA kernels declared as Python classes, compiled by NVRTC, launched with checks.

``import cuforge`` starts no CUDA, creates no folders and imports neither IPython nor
cuda.core; those happen on first use.
"""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._arrays import DeviceArray as DeviceArray
from ._arrays import empty as empty
from ._arrays import to_device as to_device
from ._arrays import zeros as zeros
from ._config import set_cache as set_cache
from ._cuda import gpu_available as gpu_available
from ._cuda import set_device as set_device
from ._cuda import synchronize as synchronize
from ._kinds import KernelAttributes as KernelAttributes
from ._launch import PreparedLaunch as PreparedLaunch
from ._rules import GridCount as GridCount
from ._rules import blocks as blocks
from ._rules import covering as covering
from ._stats import CacheStats as CacheStats
from ._stats import cache_stats as cache_stats
from ._version import __version__ as __version__
from .errors import ArgumentError as ArgumentError
from .errors import ArgumentTypeError as ArgumentTypeError
from .errors import CellCompileError as CellCompileError
from .errors import CompileError as CompileError
from .errors import ConfigError as ConfigError
from .errors import CuforgeError as CuforgeError
from .errors import DeclarationError as DeclarationError
from .errors import DeviceFaultError as DeviceFaultError
from .errors import GraphCaptureError as GraphCaptureError
from .errors import GraphUpdateError as GraphUpdateError
from .errors import LaunchError as LaunchError
from .errors import NoDeviceError as NoDeviceError
from .errors import ParseError as ParseError
from .errors import SignatureMismatchError as SignatureMismatchError
from .errors import TemplateError as TemplateError
from .family import Autotune as Autotune
from .family import Family as Family
from .family import autotune as autotune
from .kernel import CompiledKernel as CompiledKernel
from .kernel import Kernel as Kernel
from .kernel import KernelTemplate as KernelTemplate
from .kernel import kernel as kernel
from .options import CompileOptions as CompileOptions
from .registry import Registry as Registry
from .registry import registry as registry
from .types import Array as Array
from .types import ArrayType as ArrayType
from .types import BoolParam as BoolParam
from .types import ConstParam as ConstParam
from .types import DType as DType
from .types import In as In
from .types import IntParam as IntParam
from .types import Optional as Optional
from .types import Out as Out
from .types import TemplateParam as TemplateParam
from .types import TypeParam as TypeParam
from .types import VectorDType as VectorDType
from .types import bfloat16 as bfloat16
from .types import bool_ as bool_
from .types import boolparam as boolparam
from .types import complex64 as complex64
from .types import complex128 as complex128
from .types import constparam as constparam
from .types import float16 as float16
from .types import float32 as float32
from .types import float64 as float64
from .types import int8 as int8
from .types import int16 as int16
from .types import int32 as int32
from .types import int64 as int64
from .types import intparam as intparam
from .types import typeparam as typeparam
from .types import uint8 as uint8
from .types import uint16 as uint16
from .types import uint32 as uint32
from .types import uint64 as uint64
from .types import vector as vector

if _TYPE_CHECKING:
    from ._build import StaleBuildWarning as StaleBuildWarning
    from ._build import use_build as use_build
    from ._graph import Graph as Graph
    from ._graph import graph as graph
    from ._prebuilt import Module as Module

# Public names whose modules are imported on first use, not by ``import cuforge``: a launch
# from the cache needs none of them, and each import is start-up time (docs/guide/cache.md).
# ``cf.torch`` is the PyTorch adapter, which imports PyTorch.
_ON_FIRST_USE = {"torch": ("torch", None), "use_build": ("_build", "use_build"), "Graph": ("_graph", "Graph"),
                 "graph": ("_graph", "graph"), "Module": ("_prebuilt", "Module"),
                 "StaleBuildWarning": ("_build", "StaleBuildWarning")}  # fmt: skip


def __getattr__(name: str) -> _Any:
    """The names of ``_ON_FIRST_USE``, imported on first use."""
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module 'cuforge' has no attribute {name!r}")
    module, attr = _ON_FIRST_USE[name]
    found = _importlib.import_module(f".{module}", __name__)
    value = found if attr is None else getattr(found, attr)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext cuforge``: register ``%%cuda`` and ``%cuda_info`` (IPython is imported only now).

    Parameters
    ----------
    ipython : IPython.core.interactiveshell.InteractiveShell
        The shell loading the extension.
    """
    from .ipython import load_ipython_extension as load

    load(ipython)


__all__ = [
    "gpu_available",
    "load_ipython_extension",
    "__version__",
    "ArgumentError",
    "ArgumentTypeError",
    "Array",
    "ArrayType",
    "Autotune",
    "autotune",
    "bfloat16",
    "blocks",
    "bool_",
    "boolparam",
    "BoolParam",
    "cache_stats",
    "CacheStats",
    "CompiledKernel",
    "CellCompileError",
    "CompileError",
    "ConfigError",
    "CompileOptions",
    "complex128",
    "complex64",
    "ConstParam",
    "constparam",
    "covering",
    "CuforgeError",
    "DeclarationError",
    "DeviceFaultError",
    "DeviceArray",
    "DType",
    "empty",
    "Family",
    "float16",
    "float32",
    "float64",
    "graph",
    "GridCount",
    "Graph",
    "GraphCaptureError",
    "GraphUpdateError",
    "In",
    "int16",
    "int32",
    "int64",
    "int8",
    "IntParam",
    "intparam",
    "Kernel",
    "KernelAttributes",
    "KernelTemplate",
    "kernel",
    "LaunchError",
    "Module",
    "NoDeviceError",
    "ParseError",
    "PreparedLaunch",
    "Optional",
    "Out",
    "registry",
    "Registry",
    "set_cache",
    "set_device",
    "SignatureMismatchError",
    "StaleBuildWarning",
    "synchronize",
    "TemplateError",
    "to_device",
    "TemplateParam",
    "TypeParam",
    "typeparam",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "use_build",
    "vector",
    "VectorDType",
    "zeros",
]
