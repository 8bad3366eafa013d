"""Reading a kernel class: its annotations, its code, its launch rules, once, at definition.

`Declaration` holds what a class declares; a plain kernel and every instantiation of a
family share it. Mistakes raise `DeclarationError` here, never at launch.
"""

from __future__ import annotations

import inspect
import keyword
import os
import sys
from collections.abc import Callable
from typing import Any

from ..errors import DeclarationError
from ..options import CompileOptions, is_identifier
from . import instantiations as _inst
from . import kinds as _kinds
from . import launch_rules as _launch_rules
from . import render as _render
from . import rules as _rules
from .annotations import ArrayType
from .dtypes import DType
from .params import TemplateParam, TypeParam
from .value_params import ConstParam

_CPP_RESERVED = frozenset(
    "alignas alignof asm auto bool break case catch char class const constexpr const_cast continue "
    "decltype default delete do double dynamic_cast else enum explicit export extern false float for "
    "friend goto if inline int long mutable namespace new noexcept nullptr operator private protected "
    "public register reinterpret_cast return short signed sizeof static static_assert static_cast "
    "struct switch template this thread_local throw true try typedef typeid typename union unsigned "
    "using virtual void volatile wchar_t while blockIdx blockDim threadIdx gridDim warpSize".split()
)
CLASS_KEYS = frozenset(
    {"body", "template", "source", "name", "options", "block", "grid", "preamble", "template_dirs", "autotune",
     "cooperative", "cluster", "non_portable_cluster", "module", "link", "shared_mem", "restrict",
     "launch_bounds"}
)  # fmt: skip
# Keywords a call takes besides the kernel's arguments: no parameter may take their names.
LAUNCH_OPTIONS = ("grid", "block", "shared_mem", "stream", *_launch_rules.CALL_OPTIONS)


class Declaration:
    """A kernel class, read once: shared by a plain kernel and every instantiation of a family.

    ``prebuilt`` returns the class of prebuilt code (``cf.Module``, of the runtime layer, which
    this layer does not import); it is called only for a class that names ``module`` or ``link``.
    """

    def __init__(
        self, cls: type, *, prebuilt: Callable[[], type], name: str | None = None, options: CompileOptions | None = None
    ):
        ns = dict(vars(cls))
        self.cls = cls
        self.label = label = cls.__qualname__
        self.qualname = f"{cls.__module__}.{cls.__qualname__}"
        self.template_params: tuple[TemplateParam, ...] = tuple(v for v in ns.values() if isinstance(v, TemplateParam))
        _check_class_keys(label, ns)
        # C++ naming rules bind generated code only: a source= kernel's names are the user's own.
        self.params = _read_params(cls, label, self.template_params, generated=ns.get("source") is None)
        kinds = [k for k in ("body", "template", "source", "module") if ns.get(k) is not None]
        if len(kinds) != 1:
            raise DeclarationError(
                f"{label}: a kernel class needs exactly one of body (the kernel body), template "
                f"(a .cu.j2 file name), source (full C++ with name=...) or module (prebuilt code with "
                f"name=...); found {kinds or 'none'}"
            )
        self.kind = kind = kinds[0]
        self.module = _module_of(cls, label, ns["module"], prebuilt()) if kind == "module" else None
        self.link = _links_of(label, ns["link"], prebuilt()) if "link" in ns else ()
        for key in (kind, "preamble"):
            if key != "module" and key in ns and not isinstance(ns[key], str):
                raise DeclarationError(f"{label}: {key} must be a string, got {type(ns[key]).__name__}")
        self.name = name or ns.get("name") or cls.__name__
        if kind == "module" and "name" not in ns:
            raise DeclarationError(f"{label}: a module= kernel needs name = '<its entry point, or a name in its symbols>'")
        if not isinstance(self.name, str) or (not is_identifier(self.name) and kind not in ("source", "module")):
            raise DeclarationError(f"{label}: name must be a C++ identifier, got {self.name!r}")
        self._read_code(ns)
        for t in self.template_params:
            if t.name in {p[0] for p in self.params} or t.name in _CPP_RESERVED or not is_identifier(t.name):
                raise DeclarationError(f"{label}: template parameter {t.name!r} clashes with a parameter or C++ name")
        dirs = ns.get("template_dirs", ())
        dirs = (dirs,) if isinstance(dirs, str) else tuple(str(d) for d in dirs)
        self.template_dirs = _render.search_dirs(dirs)
        opts = options if options is not None else ns.get("options", CompileOptions())
        if not isinstance(opts, CompileOptions):
            raise DeclarationError(f"{label}: options must be a cuforge.CompileOptions, got {opts!r}")
        self.options = opts
        self._read_launch_rules(ns)
        self.headers = tuple(
            sorted(
                {h for _, ann in self.params for d in _dtypes_of(ann) if (h := d.header)}
                | {v.header for t in self.template_params if isinstance(t, TypeParam) for v in t.values if v.header}
            )
        )

    def _read_code(self, ns: dict[str, Any]) -> None:
        """The code of the class's kind (body, template, source; none for module) and the rules
        each kind sets on template parameters and names."""
        label, kind = self.label, self.kind
        self.body = self.preamble = None
        self.template: str | None = None
        self.source: str | None = None
        if kind == "body":
            untyped = [t.name for t in self.template_params if isinstance(t, ConstParam) and t.cpp_type is None]
            if untyped:
                raise DeclarationError(
                    f"{label}: constparam {', '.join(untyped)} needs cpp_type= in a body= kernel, whose generated "
                    f"template declares it: cf.constparam(..., cpp_type='cub::BlockScanAlgorithm') (its header in "
                    f"preamble)"
                )
            self.body = _render.Snippet.parse(self.name, "body", ns["body"])
            if ns.get("preamble"):
                self.preamble = _render.Snippet.parse(self.name, "preamble", ns["preamble"])
        elif kind == "template":
            if self.template_params:
                raise DeclarationError(
                    f"{label}: a family (typeparam/intparam) needs body= or source=; a whole-kernel template "
                    f"cannot put several instantiations in one program"
                )
            self.template = ns["template"]
        elif kind == "module":
            if self.template_params:
                raise DeclarationError(f"{label}: a module= kernel is one prebuilt entry point; it cannot be a family")
            if self.link:
                raise DeclarationError(f"{label}: a module= kernel is already built; link= applies to compiled kernels")
        else:
            if "name" not in ns:
                raise DeclarationError(
                    f"{label}: a source= kernel needs name = '<the __global__ function, or a name "
                    f"expression such as saxpy<float>>'"
                )
            if self.template_params and not is_identifier(self.name):
                raise DeclarationError(
                    f"{label}: in a source= family, name is the template's name ({self.name!r} is not an identifier); "
                    f"cuforge appends <{', '.join(t.name for t in self.template_params)}>"
                )
            self.source = ns["source"]

    def _read_launch_rules(self, ns: dict[str, Any]) -> None:
        """restrict, block, launch_bounds, grid, shared_mem, autotune and the launch kind; the
        rules over template parameters are checked for every kept combination."""
        label, tparams = self.label, self.template_params
        self.block = ns.get("block", 256)
        # every combination the class's restrict keeps, in declaration order (last fastest)
        self.combinations, self.restrict = _inst.restricted(label, tparams, ns.get("restrict"))
        # a function of template parameters, resolved per instantiation (see instantiations.resolve)
        self.block_function = _rules.template_function(label, "block", self.block, tparams)
        blocks = _inst.check_block(label, self.block, self.block_function, tparams, self.combinations)
        self.launch_bounds = ns.get("launch_bounds")  # rendered into the __global__ declaration
        self.bounds_function = _rules.template_function(label, "launch_bounds", self.launch_bounds, tparams)
        if self.launch_bounds is not None:
            bounds = _inst.check_launch_bounds(label, self.kind, self.launch_bounds, self.bounds_function, tparams,
                                               self.combinations)  # fmt: skip
            _inst.check_block_fits(label, blocks, bounds, tparams, self.combinations)
        self.grid = ns.get("grid")
        self.shared_mem = ns.get("shared_mem")  # bytes of dynamic shared memory: an int, a parameter, a function
        names, tnames = [n for n, _ in self.params], [t.name for t in tparams]
        # a function's names are checked now (a grid may also be fixed by a tuple, shared_mem not)
        grid_plain = (str, int, tuple, _rules.GridCount)
        for what, rule, plain in (("grid", self.grid, grid_plain), ("shared_mem", self.shared_mem, (str, int))):
            if rule is not None and not isinstance(rule, plain):
                _launch_rules.grid_function_names(label, rule, names, tnames, what)
        self.autotune = ns.get("autotune")
        self.launch_kind = _kinds.kind_of(label, ns.get("cooperative", False), ns.get("cluster"),
                                          ns.get("non_portable_cluster", False), where="class")  # fmt: skip


def _module_of(cls: type, label: str, value: Any, Module: type) -> Any:
    """A class's module=: a Module, or a path (relative to the file that declares the class,
    else to the working directory)."""
    if isinstance(value, Module):
        return value
    if not isinstance(value, (str, os.PathLike)):
        raise DeclarationError(f"{label}: module expects a cuforge.Module or a path, got {type(value).__name__}")
    path = os.fspath(value)
    origin = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if not os.path.isabs(path) and origin and os.path.isfile(os.path.join(os.path.dirname(origin), path)):
        path = os.path.join(os.path.dirname(origin), path)
    try:
        return Module(path)
    except DeclarationError as exc:
        raise DeclarationError(f"{label}: module={value!r}: {exc}") from None


def _links_of(label: str, value: Any, Module: type) -> tuple[Any, ...]:
    """A class's link=: Modules (LTO-IR, relocatable cubins) and CUDA C++ sources."""
    items = (value,) if isinstance(value, (str, Module)) else value
    if not isinstance(items, (tuple, list)) or not all(isinstance(i, (str, Module)) for i in items):
        raise DeclarationError(
            f"{label}: link expects a list of cuforge.Module objects (LTO-IR or relocatable cubins) and CUDA C++ "
            f"source strings, got {value!r}"
        )
    return tuple(items)


def _dtypes_of(ann: Any) -> tuple[DType, ...]:
    inner = ann.dtype if isinstance(ann, ArrayType) else ann
    return inner.values if isinstance(inner, TypeParam) else (inner,)


def substitute(ann: Any, values: dict[str, Any]) -> Any:
    """An instantiation's annotation: ``ann`` with its type parameter (a `TypeParam`, or an
    array's) replaced by its value in ``values``."""
    if isinstance(ann, TypeParam):
        return values[ann.name]
    if isinstance(ann, ArrayType) and isinstance(ann.dtype, TypeParam):
        return ArrayType(values[ann.dtype.name], ann.ndim, ann.intent, ann.optional)
    return ann


def _check_class_keys(label: str, ns: dict[str, Any]) -> None:
    """Every attribute is one cuforge reads, functions included (a misspelt ``gird`` function
    would otherwise be silently ignored); names starting with ``_`` are the user's own."""
    annotated = set(ns.get("__annotations__", {}))
    for key, value in ns.items():
        if key.startswith("_") or key in CLASS_KEYS or key in annotated or isinstance(value, TemplateParam):
            continue
        import difflib  # (for the error's suggestion only)

        close = difflib.get_close_matches(key, sorted(CLASS_KEYS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise DeclarationError(
            f"{label}: unknown class attribute {key!r}; {hint}a kernel class takes annotations for its "
            f"parameters and {', '.join(sorted(CLASS_KEYS))} (start a helper's name with _ to keep it)"
        )


def _read_params(cls: type, label: str, tparams: tuple[Any, ...], *, generated: bool = True) -> tuple[tuple[str, Any], ...]:
    """(name, annotation) per parameter, in order; annotations may name the class's type parameters."""
    try:
        annotations = inspect.get_annotations(cls, eval_str=True)
    except Exception as exc:
        raise DeclarationError(f"{label}: cannot evaluate the annotations: {exc}") from None
    module_globals = getattr(sys.modules.get(cls.__module__), "__dict__", {})
    params = []
    for name, ann in annotations.items():
        if isinstance(ann, str):  # a quoted annotation under `from __future__ import annotations`
            try:
                ann = eval(ann, dict(module_globals), dict(vars(cls)))
            except Exception as exc:
                raise DeclarationError(f"{label}: cannot evaluate the annotation of '{name}': {exc}") from None
        if name in LAUNCH_OPTIONS:
            raise DeclarationError(
                f"{label}: parameter name {name!r} is a launch option ({', '.join(LAUNCH_OPTIONS)}); rename it"
            )
        if not is_identifier(name) or keyword.iskeyword(name) or (generated and (name in _CPP_RESERVED or name.startswith("_"))):
            raise DeclarationError(
                f"{label}: parameter name {name!r} cannot be used in C++ (a reserved word, CUDA built-in, "
                f"or leading underscore); rename it"
            )
        inner = ann.dtype if isinstance(ann, ArrayType) else ann
        if not isinstance(ann, (DType, ArrayType, TypeParam)):
            raise DeclarationError(
                f"{label}: parameter '{name}' has annotation {ann!r}; expected a cuforge type such as "
                f"cf.float32, cf.In[cf.float32], cf.Array[cf.float32] or cf.Out[cf.float32]"
            )
        if isinstance(inner, TypeParam) and inner not in tparams:
            raise DeclarationError(f"{label}: parameter '{name}' uses a type parameter that is not declared on this class")
        params.append((name, ann))
    return tuple(params)
