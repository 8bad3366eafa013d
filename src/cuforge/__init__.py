"""cuforge: CUDA kernels declared as Python classes, compiled by NVRTC, launched with checks.

``import cuforge`` starts no CUDA, creates no folders and imports neither IPython nor
cuda.core; those happen on first use.
"""

# First: its finder serves the package's modules imported below from one file (see _bundle).
from . import _bundle  # isort: skip  # noqa: F401

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._compile.stats import CacheStats as CacheStats
from ._compile.stats import cache_stats as cache_stats
from ._config import cache_dir as cache_dir
from ._config import set_cache as set_cache
from ._declare.annotations import Array as Array
from ._declare.annotations import ArrayType as ArrayType
from ._declare.annotations import In as In
from ._declare.annotations import Optional as Optional
from ._declare.annotations import Out as Out
from ._declare.dtypes import DType as DType
from ._declare.dtypes import bfloat16 as bfloat16
from ._declare.dtypes import bool_ as bool_
from ._declare.dtypes import complex64 as complex64
from ._declare.dtypes import complex128 as complex128
from ._declare.dtypes import float16 as float16
from ._declare.dtypes import float32 as float32
from ._declare.dtypes import float64 as float64
from ._declare.dtypes import int8 as int8
from ._declare.dtypes import int16 as int16
from ._declare.dtypes import int32 as int32
from ._declare.dtypes import int64 as int64
from ._declare.dtypes import uint8 as uint8
from ._declare.dtypes import uint16 as uint16
from ._declare.dtypes import uint32 as uint32
from ._declare.dtypes import uint64 as uint64
from ._declare.params import TemplateParam as TemplateParam
from ._declare.params import TypeParam as TypeParam
from ._declare.params import typeparam as typeparam
from ._declare.rules import GridCount as GridCount
from ._declare.rules import blocks as blocks
from ._declare.rules import covering as covering
from ._declare.value_params import BoolParam as BoolParam
from ._declare.value_params import ConstParam as ConstParam
from ._declare.value_params import IntParam as IntParam
from ._declare.value_params import boolparam as boolparam
from ._declare.value_params import constparam as constparam
from ._declare.value_params import intparam as intparam
from ._declare.vectors import VectorDType as VectorDType
from ._declare.vectors import vector as vector
from ._kernel.decorator import CompiledKernel as CompiledKernel
from ._kernel.decorator import Kernel as Kernel
from ._kernel.decorator import kernel as kernel
from ._kernel.family import Family as Family
from ._kernel.registry import Registry as Registry
from ._kernel.registry import registry as registry
from ._runtime.cuda import gpu_available as gpu_available
from ._runtime.cuda import set_device as set_device
from ._runtime.cuda import synchronize as synchronize
from ._runtime.limits import KernelAttributes as KernelAttributes
from ._version import __version__ as __version__
from .errors import ArgumentError as ArgumentError
from .errors import ArgumentTypeError as ArgumentTypeError
from .errors import BarrierMisuseError as BarrierMisuseError
from .errors import CellCompileError as CellCompileError
from .errors import CompileError as CompileError
from .errors import CompilerNotFoundError as CompilerNotFoundError
from .errors import ConfigError as ConfigError
from .errors import CuforgeError as CuforgeError
from .errors import DeclarationError as DeclarationError
from .errors import DeviceFaultError as DeviceFaultError
from .errors import GraphCaptureError as GraphCaptureError
from .errors import GraphUpdateError as GraphUpdateError
from .errors import KernelCheckError as KernelCheckError
from .errors import LaunchError as LaunchError
from .errors import LaunchTimeoutError as LaunchTimeoutError
from .errors import MisalignedAccessError as MisalignedAccessError
from .errors import NoDeviceError as NoDeviceError
from .errors import OutOfBoundsError as OutOfBoundsError
from .errors import ParseError as ParseError
from .errors import RaceError as RaceError
from .errors import SignatureMismatchError as SignatureMismatchError
from .errors import TemplateError as TemplateError
from .errors import UninitializedReadError as UninitializedReadError
from .errors import WarpMisuseError as WarpMisuseError
from .options import CompileOptions as CompileOptions

if _TYPE_CHECKING:
    from ._compile.build import StaleBuildWarning as StaleBuildWarning
    from ._compile.build import use_build as use_build
    from ._kernel.autotune import Autotune as Autotune
    from ._kernel.autotune import autotune as autotune
    from ._kernel.template import KernelTemplate as KernelTemplate
    from ._launch.graph import Graph as Graph
    from ._launch.graph import graph as graph
    from ._launch.prepared import PreparedLaunch as PreparedLaunch
    from ._runtime.device_array import DeviceArray as DeviceArray
    from ._runtime.device_array import empty as empty
    from ._runtime.device_array import to_device as to_device
    from ._runtime.device_array import zeros as zeros
    from ._runtime.module import Module as Module

# Public names whose modules are imported on first use, not by ``import cuforge``: a launch
# from the cache needs none of them, and each import is start-up time (docs/guide/cache.md).
# ``cf.torch`` is the PyTorch adapter, which imports PyTorch; ``cf.jax`` the JAX one. A launch
# with CuPy's, PyTorch's or NumPy's arrays never meets a DeviceArray.
_ON_FIRST_USE = {"torch": ("torch", None), "jax": ("jax", None), "use_build": ("_compile.build", "use_build"),
                 "Graph": ("_launch.graph", "Graph"),
                 "graph": ("_launch.graph", "graph"), "Module": ("_runtime.module", "Module"),
                 "StaleBuildWarning": ("_compile.build", "StaleBuildWarning"),
                 "Autotune": ("_kernel.autotune", "Autotune"), "autotune": ("_kernel.autotune", "autotune"),
                 "KernelTemplate": ("_kernel.template", "KernelTemplate"),
                 "PreparedLaunch": ("_launch.prepared", "PreparedLaunch"),
                 "DeviceArray": ("_runtime.device_array", "DeviceArray"), "empty": ("_runtime.device_array", "empty"),
                 "to_device": ("_runtime.device_array", "to_device"), "zeros": ("_runtime.device_array", "zeros")}  # fmt: skip


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
    from .integrations.ipython import load_ipython_extension as load

    load(ipython)


__all__ = [
    "gpu_available",
    "load_ipython_extension",
    "__version__",
    "ArgumentError",
    "BarrierMisuseError",
    "KernelCheckError",
    "MisalignedAccessError",
    "OutOfBoundsError",
    "RaceError",
    "UninitializedReadError",
    "WarpMisuseError",
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
    "cache_dir",
    "cache_stats",
    "CacheStats",
    "CompiledKernel",
    "CellCompileError",
    "CompileError",
    "CompilerNotFoundError",
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
    "LaunchTimeoutError",
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
