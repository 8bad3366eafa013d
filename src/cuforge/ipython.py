"""The ``%%cuda`` cell magic and ``%cuda_info``: a thin adapter over the public API.

``%load_ext cuforge`` registers them. A cell of CUDA C++ is rendered with Jinja (the
notebook's variables visible), its ``__global__`` kernels are found and their parameters
mapped to cuforge types, and each becomes an ordinary cuforge kernel (``source=``), bound in
the notebook under its name: the same checks, cache and launch rule as class-declared kernels.
"""

from .integrations.ipython import CellCompileError as CellCompileError
from .integrations.ipython import CudaMagics as CudaMagics
from .integrations.ipython import KernelTemplate as KernelTemplate
from .integrations.ipython import load_ipython_extension as load_ipython_extension

__all__ = ["CellCompileError", "CudaMagics", "KernelTemplate", "load_ipython_extension"]
