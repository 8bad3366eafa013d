"""Reading ``__global__`` kernel declarations out of CUDA C++ (for ``%%cuda`` cells).

Not a C++ parser: enough of the declaration grammar kernels use (``extern "C"``, templates,
``__launch_bounds__``, ``const``/``__restrict__``/``volatile`` qualifiers, one level of
pointer) to map each parameter to a cuforge annotation, and a clear error naming the
parameter for anything else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParseError
from . import dtypes as t
from .annotations import ArrayType
from .vectors import vector_named

_SCALARS: dict[str, t.DType] = {
    "bool": t.bool_,
    "char": t.int8, "signed char": t.int8, "int8_t": t.int8,
    "unsigned char": t.uint8, "uint8_t": t.uint8,
    "short": t.int16, "short int": t.int16, "signed short": t.int16, "int16_t": t.int16,
    "unsigned short": t.uint16, "unsigned short int": t.uint16, "uint16_t": t.uint16,
    "int": t.int32, "signed": t.int32, "signed int": t.int32, "int32_t": t.int32,
    "unsigned": t.uint32, "unsigned int": t.uint32, "uint32_t": t.uint32,
    "long": t.int64, "long int": t.int64, "long long": t.int64, "long long int": t.int64,
    "signed long long": t.int64, "int64_t": t.int64, "ptrdiff_t": t.int64,
    "unsigned long": t.uint64, "unsigned long long": t.uint64, "unsigned long long int": t.uint64,
    "uint64_t": t.uint64, "size_t": t.uint64,
    "__half": t.float16, "half": t.float16,
    "__nv_bfloat16": t.bfloat16, "nv_bfloat16": t.bfloat16,
    "float": t.float32, "double": t.float64,
    "cuFloatComplex": t.complex64, "cuComplex": t.complex64, "cuDoubleComplex": t.complex128,
    "cuda::std::complex<float>": t.complex64, "cuda::std::complex<double>": t.complex128,
    "cuforge::complex<float>": t.complex64, "cuforge::complex<double>": t.complex128,
}  # fmt: skip
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict"}
_HEAD = re.compile(
    r"(?:template\s*<(?P<tpl>[^{};]*?)>\s*)?"
    r'(?P<ext>extern\s+"C"\s+)?(?:static\s+)?__global__\s+'
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
    r"(?P<name>[A-Za-z_]\w*)\s*\("
)


@dataclass
class ParsedKernel:
    """One ``__global__`` function as declared."""

    name: str
    params: list[tuple[str, str]]  # (name, C++ type as written)
    template_params: list[tuple[str, str]] = field(default_factory=list)  # (kind "type"/"value", name)
    extern_c: bool = False
    line: int = 1
    defaults: dict[str, str] = field(default_factory=dict)  # parameter name -> its C++ default, as written


def strip_comments(source: str) -> str:
    """Blank out comments and string contents' comment look-alikes, keeping line numbers."""

    def blank(m: re.Match[str]) -> str:
        text = m.group(0)
        if text.startswith(('"', "'")):
            return text
        return re.sub(r"[^\n]", " ", text)

    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', blank, source, flags=re.S)


def _split_top(text: str) -> list[str]:
    """Split on commas outside <>, () and []."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def _extern_c_blocks(src: str) -> list[tuple[int, int]]:
    spans = []
    for m in re.finditer(r'extern\s+"C"\s*\{', src):
        depth, i = 1, m.end()
        while i < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            i += 1
        spans.append((m.end(), i))
    return spans


def find_kernels(source: str) -> list[ParsedKernel]:
    """Every ``__global__`` function declared (or defined) in ``source``, in order."""
    src = strip_comments(source)
    blocks = _extern_c_blocks(src)
    found: dict[str, ParsedKernel] = {}
    for m in _HEAD.finditer(src):
        depth, i = 1, m.end()
        while i < len(src) and depth:
            depth += {"(": 1, ")": -1}.get(src[i], 0)
            i += 1
        params, defaults = [], {}
        for index, raw in enumerate(_split_top(src[m.end() : i - 1])):
            if raw in ("", "void"):
                continue
            decl, eq, default = raw.partition("=")
            pm = re.match(r"^(?P<type>.*?[\s*&])(?P<name>[A-Za-z_]\w*)\s*$", decl.strip())
            if not pm:
                raise ParseError(f"kernel '{m['name']}': cannot read parameter {index} ({raw!r}); state it with --signature")
            params.append((pm["name"], pm["type"].strip()))
            if eq:
                defaults[pm["name"]] = default.strip()
        tparams = []
        for tp in _split_top(m["tpl"] or ""):
            tm = re.match(r"^(typename|class)\s+([A-Za-z_]\w*)", tp) or re.match(r"^[\w\s]+?\s([A-Za-z_]\w*)\s*$", tp)
            if tm is None:
                raise ParseError(f"kernel '{m['name']}': cannot read template parameter {tp!r}")
            tparams.append(("type", tm.group(2)) if tm.lastindex == 2 else ("value", tm.group(1)))
        in_block = any(a <= m.start() < b for a, b in blocks)
        kernel = ParsedKernel(m["name"], params, tparams, bool(m["ext"]) or in_block, src.count("\n", 0, m.start()) + 1,
                              defaults)  # fmt: skip
        found[kernel.name] = kernel  # a later definition replaces a forward declaration
    return list(found.values())


_NULL = {"NULL", "nullptr", "0", "0L", "(void*)0"}


def cpp_type(text: str, where: str, substitutions: dict[str, str] | None = None, default: str | None = None) -> Any:
    """The cuforge annotation for a parameter's C++ type: a DType, or an ArrayType for a
    pointer (``cf.Optional`` where its C++ default is ``NULL``, ``nullptr`` or ``0``). A
    pointer to a CUDA vector type (``const uint4*``) is an array of that vector type."""
    subs = substitutions or {}
    pointers = text.count("*")
    if "&" in text or "[" in text or pointers > 1:
        raise ParseError(f"{where} has type '{text}': references, arrays and pointers to pointers are not supported")
    before = text.partition("*")[0]
    words = before.replace("*", " ").split()
    base_words = [w for w in words if w not in _QUALIFIERS]
    base = " ".join(subs.get(w, w) for w in base_words)
    base = " ".join(base.split())
    dtype: Any = _SCALARS.get(base)
    if dtype is None:
        dtype = vector_named(base)  # a vector by value (``const uchar4 colors``) or an array of them
    if dtype is None:
        known = ", ".join(sorted({"float", "double", "int", "long long", "__half", "__nv_bfloat16", "bool", "..."}))
        raise ParseError(
            f"{where} has type '{text}', which cuforge cannot map (known: {known}); state the signature "
            f"with --signature 'name(a: float32, x: In[float32], ...)'"
        )
    if not pointers:
        return dtype
    pointee_const = "const" in words
    optional = default is not None and " ".join(default.split()) in _NULL
    return ArrayType(dtype, None, "in" if pointee_const else "inout", optional)


# `extern __shared__ [__align__(N)] T name[];` (one declarator): the dynamic shared memory
_EXTERN_SHARED = re.compile(
    r"\bextern\s+__shared__\s+(?:__align__\s*\(\s*(?P<align>\d+)\s*\)\s+)?"
    r"(?P<type>[A-Za-z_][\w:<>,\s*]*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;"
)
SHARED_BYTES = "cuforge_dynamic_smem_"


def share_dynamic_shared(source: str) -> tuple[str, list[str]]:
    """``source`` with each ``extern __shared__ T name[];`` in a function body rewritten, on
    its line, as ``extern __shared__ __align__(16) unsigned char cuforge_dynamic_smem_[];
    T* const name = (T*)cuforge_dynamic_smem_;``; and the names rewritten.

    Every such array is the block's dynamic shared memory, whatever its name and type; but a
    program whose template declares one with a dependent type and is instantiated for two
    types holds two declarations of one entity with different types, which NVRTC refuses
    ("declaration is incompatible"). One array of bytes, cast where each kernel needs its
    type, is the same memory under one declaration, so a ``%%cuda`` cell stays one program.
    A declaration at namespace scope, or of several arrays at once, is left as written.
    """
    src = strip_comments(source)
    out, names, last = [], [], 0
    for m in _EXTERN_SHARED.finditer(src):
        if not _in_function_body(src, m.start()):
            continue
        ctype = " ".join(m["type"].split())
        align = max(16, int(m["align"] or 0))
        out += [source[last : m.start()],
                f"extern __shared__ __align__({align}) unsigned char {SHARED_BYTES}[]; "
                f"{ctype}* const {m['name']} = ({ctype}*){SHARED_BYTES};"]  # fmt: skip
        names.append(m["name"])
        last = m.end()
    return "".join(out) + source[last:], names


def _in_function_body(src: str, pos: int) -> bool:
    """Whether ``pos`` lies in a block opened after a ``)`` (a function's body, or a
    statement's in it), not only in namespaces, ``extern "C"`` blocks or classes."""
    openers: list[int] = []
    for i, ch in enumerate(src[:pos]):
        if ch == "{":
            openers.append(i)
        elif ch == "}" and openers:
            openers.pop()
    for i in openers:
        j = i - 1
        while j >= 0 and src[j].isspace():
            j -= 1
        if j >= 0 and src[j] == ")":
            return True
    return False


_SIG = re.compile(r"^\s*(?P<name>[A-Za-z_][\w<>, ]*?)?\s*\((?P<params>.*)\)\s*$", re.S)


def parse_signature(text: str) -> tuple[str | None, list[tuple[str, Any]]]:
    """``"saxpy(a: float32, x: In[float32], y: Array[float32, 2])"`` -> (name, [(param, annotation)]).

    An array's element may be a vector type, by cuforge's name or CUDA's (``In[float32x4]``,
    ``In[uint4]``); ``Optional[In[float32]]`` is an array that may be None."""
    m = _SIG.match(text)
    if not m:
        raise ParseError(f"--signature {text!r}: expected 'name(param: type, ...)', e.g. 'saxpy(a: float32, x: In[float32])'")
    out: list[tuple[str, Any]] = []
    for part in _split_top(m["params"]):
        pm = re.match(r"^([A-Za-z_]\w*)\s*:\s*(?:(Optional\[\s*)?(Array|In|Out)\[\s*([\w:]+)\s*(?:,\s*(\d+)\s*)?\]"
                      r"(?(2)\s*\])|(\w+))$", part)  # fmt: skip
        if not pm:
            raise ParseError(f"--signature: cannot read {part!r}; write 'x: In[float32]', 'x: Optional[In[float32]]' "
                             f"or 'n: int64'")  # fmt: skip
        name, optional, kind, inner, ndim, scalar = pm.groups()
        dtype = (vector_named(inner) if inner else None) or t.dtype_of(inner or scalar)
        if dtype is None:
            raise ParseError(f"--signature: '{inner or scalar}' (parameter '{name}') is not a cuforge dtype such as "
                             f"float32, nor a vector type such as float32x4 (an array's element)")  # fmt: skip
        if kind:
            intent = {"Array": "inout", "In": "in", "Out": "out"}[kind]
            out.append((name, ArrayType(dtype, int(ndim) if ndim else None, intent, bool(optional))))
        else:
            out.append((name, dtype))
    name = m["name"].strip() if m["name"] else None
    return name, out


def split_instantiation(text: str) -> tuple[str, list[str]]:
    """``"k<float, 256>"`` -> ("k", ["float", "256"])."""
    m = re.match(r"^\s*([A-Za-z_]\w*)\s*<(.*)>\s*$", text, re.S)
    if not m:
        raise ParseError(f"--instantiate {text!r}: expected a name expression such as 'k<float, 256>'")
    return m.group(1), _split_top(m.group(2))
