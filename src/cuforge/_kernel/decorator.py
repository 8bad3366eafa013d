"""The ``@cf.kernel`` decorator: a Python class declares a kernel or a family, read once.

It sits above the modules it ties together: ``_declare.declaration`` reads the class,
``kernel`` makes a `Kernel`, ``family`` a `Family`, and ``registry`` lists every declaration.
"""

from __future__ import annotations

import copyreg
from typing import Any

from .._declare.declaration import Declaration
from ..errors import DeclarationError
from ..options import CompileOptions
from .family import Family
from .kernel import CompiledKernel, Kernel
from .registry import registry

__all__ = ["CompiledKernel", "Kernel", "kernel"]


def kernel(cls: type | None = None, *, name: str | None = None, options: CompileOptions | None = None) -> Any:
    """Declare a CUDA kernel from a class (use as ``@cf.kernel`` or ``@cf.kernel(options=...)``).

    The class's annotations are the kernel's parameters, in order: scalar dtypes
    (``cf.float32``) and arrays (``cf.In[...]``, ``cf.Array[...]``, ``cf.Out[...]``; an array
    wrapped in ``cf.Optional[...]`` may be passed as None, or left out, for a null pointer).
    Exactly one of ``body`` (a Jinja template of the kernel body; the ``__global__``
    signature is generated), ``template`` (a whole-kernel ``.cu.j2`` file) or ``source``
    (complete C++, with ``name``) gives the code, or ``module`` (a `Module` or the
    path of prebuilt code, with ``name``) binds a prebuilt entry point. Optional:

    - ``options`` ([`CompileOptions`][cuforge.CompileOptions]);
    - ``block``: threads per block (default 256), an int or a tuple, intparam names, or a
      function of the template parameters;
    - ``grid``: a fixed grid in blocks, a function of parameters by name (and ``block``)
      giving blocks, [`cf.blocks("nb")`][cuforge.blocks] (that many blocks) or
      [`cf.covering("n")`][cuforge.covering] (enough blocks to cover ``n`` threads, or an
      array's elements). **A plain string, ``grid = "n"``, counts threads, as
      ``cf.covering("n")`` does**: a port of ``<<<numBlocks, 512>>>`` needs ``cf.blocks``;
    - ``shared_mem``: bytes of dynamic shared memory, an int, an integer parameter's name,
      or a function of parameters, template parameters and ``block``;
    - ``launch_bounds``: ``__launch_bounds__`` for a ``body`` kernel, an int or a tuple of
      up to three, intparam names, or a function of the template parameters;
    - ``restrict``: in a family, a predicate over template parameters by name (or a list of
      them) that keeps only the combinations it accepts;
    - ``preamble`` (device code placed before the kernel), ``template_dirs``, ``link``
      (Modules and sources linked with nvJitLink), ``autotune`` (in a family);
    - ``cooperative``, ``cluster`` and ``non_portable_cluster``: the launch kind (see
      [Launch kinds](guide/launch-kinds.md)).

    See [Launching](guide/launching.md) for the launch rules. A class with
    ``cf.typeparam``/``cf.intparam`` attributes declares a family instead (see `Family`).
    Every declaration is listed in ``cf.registry``.

    Parameters
    ----------
    cls : type
        The class to read (given by the decorator).
    name : str, optional
        The kernel's C++ name (default: the class's name).
    options : CompileOptions, optional
        Instead of the class's ``options``.

    Returns
    -------
    Kernel or Family

    Raises
    ------
    DeclarationError
        For anything the class declares that cuforge cannot use, when the class is defined.

    Examples
    --------
    >>> @cf.kernel
    ... class Scale:
    ...     a: cf.float32
    ...     x: cf.Array[cf.float32]
    ...     n: cf.int64
    ...     body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) x[i] *= a;"
    >>> Scale
    <cuforge.Kernel Scale(a: float32, x: Array[float32], n: int64)>
    >>> @cf.kernel(options=cf.CompileOptions(fast_math=True))
    ... class FastScale:
    ...     x: cf.Array[cf.float32]
    ...     body = "x[threadIdx.x] = __expf(x[threadIdx.x]);"
    """
    if cls is None:
        return lambda c: kernel(c, name=name, options=options)
    if not isinstance(cls, type):
        raise DeclarationError(f"@cuforge.kernel decorates a class, got {cls!r}")
    decl = Declaration(cls, name=name, options=options, prebuilt=_module_class)
    made: Kernel | Family = Family(decl) if decl.template_params else Kernel(decl)
    if decl.autotune is not None and not decl.template_params:
        raise DeclarationError(f"{decl.label}: autotune needs a family (cf.intparam attributes to choose between)")
    registry._add(decl.qualname, made)
    return made


def _module_class() -> type:
    """`Module`, for the classes that name ``module`` or ``link`` (imported then, not with cuforge)."""
    from .._runtime.module import Module

    return Module


def _declared(name: str, qualname: str, module: str, ns: dict[str, Any]) -> Any:
    """Unpickle by declaration: declare the class again in this process (see ``pickling``)."""
    cls = type(name, (), {**ns, "__module__": module})
    cls.__qualname__ = qualname
    return kernel(cls)


def _reduce_kernel(k: Kernel) -> tuple[Any, ...]:
    from . import pickling as _pickling  # (imported by the first pickle: start-up)

    return _pickling.reduce_kernel(k, _declared)


def _reduce_family(f: Family) -> tuple[Any, ...]:
    from . import pickling as _pickling

    return _pickling.reduce_family(f, _declared)


# Kernel and Family pickle through these (pickle, copy and cloudpickle read copyreg's table
# before __reduce_ex__): the reductions need the decorator, which sits above both classes.
copyreg.pickle(Kernel, _reduce_kernel)
copyreg.pickle(Family, _reduce_family)
