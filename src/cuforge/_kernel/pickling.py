"""How kernels travel to worker processes (multiprocessing, Dask, Ray): by reference when
their class can be imported there, else by declaration. Never with driver handles: an
unpickled kernel compiles, or reads the disk cache, in the worker.

- A kernel or family declared at module level pickles as (module, qualified name).
- A family instantiation pickles as its family and template arguments (``Axpy[cf.float32, 256]``).
- Anything else (a class in ``__main__`` or a notebook, inside a function, from a ``%%cuda``
  cell) pickles by declaration: a plain kernel as its signature, rendered source, name
  expression, options and launch rules, which gives the worker the same cache key; a family
  as its class namespace (its grid function then needs cloudpickle, as Dask uses).
"""

from __future__ import annotations

import importlib
import operator
import sys
from collections.abc import Callable
from typing import Any

from .._declare.declaration import CLASS_KEYS
from .._declare.params import TemplateParam
from ..errors import DeclarationError


def _find(module: str, qualname: str) -> Any:
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target


def _import(module: str, qualname: str) -> Any:
    """Unpickle by reference."""
    importlib.import_module(module)
    found = _find(module, qualname)
    if found is None:
        raise DeclarationError(f"unpickling a cuforge kernel: {module}.{qualname} is not there; is the same code installed?")
    return found


def _by_reference(obj: Any) -> tuple[Any, ...] | None:
    cls = obj.__wrapped__  # the declaring class
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        return None
    if _find(cls.__module__, cls.__qualname__) is not obj:
        return None
    return (_import, (cls.__module__, cls.__qualname__))


def _plain(fn: Any) -> Any:
    return fn.__func__ if isinstance(fn, (staticmethod, classmethod)) else fn


def reduce_kernel(k: Any, declared: Callable[..., Any]) -> tuple[Any, ...]:
    """How a Kernel pickles; ``declared(name, qualname, module, namespace)`` declares a class
    again where it unpickles (the decorator's, which registers this with copyreg)."""
    decl = k._decl
    if k.family is not None:
        return (operator.getitem, (k.family, tuple(k.template_args.values())))
    found = _by_reference(k)
    if found is not None:
        return found
    plan = k._plan
    ns: dict[str, Any] = {
        "__annotations__": {p.name: p.type for p in k.signature.params},
        "name": k.name_expression if decl.module is None else decl.name,
        "options": k.options,
        "block": plan.block,
        "cooperative": plan.kind.cooperative,
        "cluster": plan.kind.cluster,
        "non_portable_cluster": plan.kind.non_portable_cluster,
    }
    if decl.module is not None:
        ns["module"] = decl.module
    else:
        ns["source"] = k.render()
        if decl.link:
            ns["link"] = decl.link
    if decl.grid is not None:
        ns["grid"] = _plain(decl.grid) if callable(_plain(decl.grid)) else decl.grid
        if callable(ns["grid"]):
            ns["grid"] = staticmethod(ns["grid"])
    return (declared, (decl.cls.__name__, decl.cls.__qualname__, decl.cls.__module__, ns))


def reduce_family(f: Any, declared: Callable[..., Any]) -> tuple[Any, ...]:
    """How a Family pickles (see `reduce_kernel`)."""
    found = _by_reference(f)
    if found is not None:
        return found
    cls = f.__wrapped__
    kept = (*CLASS_KEYS, "__annotations__")
    ns = {k: v for k, v in vars(cls).items() if k in kept or isinstance(v, TemplateParam)}
    return (declared, (cls.__name__, cls.__qualname__, cls.__module__, ns))
