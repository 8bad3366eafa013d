"""The dtype vocabulary and the annotations that declare kernel parameters.

A `DType` is a value: it knows its C++ spelling (``str(cf.float32) == "float"``,
so ``{{ T }}`` in a template renders C++), its NumPy dtype, its size and alignment, and
the header NVRTC needs for it. ``cf.Array[cf.float32]``, ``cf.In[...]`` and
``cf.Out[...]`` build `ArrayType` values. Both are resolved when a kernel class is
defined, never on the launch path.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import DeclarationError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ConstParam",
    "IntParam",
    "TemplateParam",
    "TypeParam",
    "constparam",
    "intparam",
    "typeparam",
    "Array",
    "ArrayType",
    "DType",
    "In",
    "Optional",
    "Out",
    "SCALAR_TYPES",
    "bfloat16",
    "bool_",
    "complex64",
    "complex128",
    "dtype_of",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]


@dataclass(frozen=True, eq=False, repr=False)
class DType:
    """A scalar type a kernel parameter or array element may have.

    Instances are singletons compared by identity; use the module constants
    (``cf.float32``) or `dtype_of`.

    Attributes
    ----------
    name : str
        The NumPy-style name (``"float32"``).
    cpp : str
        The C++ spelling NVRTC sees (``"float"``); also what ``str()`` returns.
    itemsize : int
        Size in bytes.
    kind : str
        NumPy's kind letter: ``b`` bool, ``i`` signed, ``u`` unsigned, ``f`` float,
        ``c`` complex.
    header : str or None
        The CUDA header that defines the C++ type, when it is not built in.
    pack : str
        The ``struct`` code a scalar of this type is packed with (``"ff"`` for complex64:
        two floats; ``"H"`` for bfloat16: its 16 bits).
    max_finite : float or None
        The largest finite value of a float type (None for the others).

    Examples
    --------
    >>> cf.float32.name, str(cf.float32), cf.float32.itemsize
    ('float32', 'float', 4)
    >>> cf.int8.range
    (-128, 127)
    """

    __module__ = "cuforge"

    name: str
    cpp: str
    itemsize: int
    kind: str
    align: int
    pack: str
    header: str | None = None
    max_finite: float | None = None

    @property
    def range(self) -> tuple[int, int] | None:
        """The range of an integer type.

        Returns
        -------
        tuple of int, or None
            (lowest, highest) for an integer type; None for the others.
        """
        if self.kind == "i":
            return -(2 ** (8 * self.itemsize - 1)), 2 ** (8 * self.itemsize - 1) - 1
        if self.kind == "u":
            return 0, 2 ** (8 * self.itemsize) - 1
        return None

    @property
    def ckind(self) -> str:
        """How cuforge's C launcher takes a scalar of this type.

        Returns
        -------
        str
            ``i``/``u`` signed/unsigned integers, ``f``/``d`` float32/float64, ``b`` bool;
            ``x`` for types it hands to the Python checks to convert (float16, bfloat16,
            complex).
        """
        if self.kind in "iub":
            return self.kind
        return {"float32": "f", "float64": "d"}.get(self.name, "x")

    @property
    def is_float(self) -> bool:
        """Whether this is a floating-point type (float16, bfloat16, float32, float64).

        Returns
        -------
        bool
        """
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        """Whether this is a signed or unsigned integer type (bool is not).

        Returns
        -------
        bool
        """
        return self.kind in "iu"

    @property
    def is_complex(self) -> bool:
        """Whether this is complex64 or complex128.

        Returns
        -------
        bool
        """
        return self.kind == "c"

    @property
    def numpy(self) -> np.dtype[Any]:
        """The matching NumPy dtype.

        Returns
        -------
        numpy.dtype

        Raises
        ------
        DeclarationError
            For bfloat16 where the ``ml_dtypes`` package is not installed.
        """
        import numpy as np

        if self.name == "bfloat16":
            try:
                import ml_dtypes
            except ImportError as exc:
                raise DeclarationError(
                    "cuforge.bfloat16 has no NumPy dtype without the ml_dtypes package; "
                    "install it with `pip install ml_dtypes` (PyTorch bfloat16 tensors work without it)"
                ) from exc
            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.name)

    def __str__(self) -> str:
        return self.cpp

    def __repr__(self) -> str:
        return f"cuforge.{self.name}"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # By name through dtype_of: the singletons stay singletons (``cf.bool_`` is no
        # attribute named "bool", so pickling by attribute name cannot work).
        return dtype_of, (self.name,)


bool_ = DType("bool", "bool", 1, "b", 1, "?")
int8 = DType("int8", "signed char", 1, "i", 1, "b")
int16 = DType("int16", "short", 2, "i", 2, "h")
int32 = DType("int32", "int", 4, "i", 4, "i")
int64 = DType("int64", "long long", 8, "i", 8, "q")
uint8 = DType("uint8", "unsigned char", 1, "u", 1, "B")
uint16 = DType("uint16", "unsigned short", 2, "u", 2, "H")
uint32 = DType("uint32", "unsigned int", 4, "u", 4, "I")
uint64 = DType("uint64", "unsigned long long", 8, "u", 8, "Q")
float16 = DType("float16", "__half", 2, "f", 2, "e", "cuda_fp16.h", 65504.0)
bfloat16 = DType("bfloat16", "__nv_bfloat16", 2, "f", 2, "H", "cuda_bf16.h", 3.3895313892515355e38)
float32 = DType("float32", "float", 4, "f", 4, "f", None, 3.4028234663852886e38)
float64 = DType("float64", "double", 8, "f", 8, "d", None, sys.float_info.max)
# cuforge::complex<T> (templates/cuforge_complex.cuh): NumPy's complex64/128 layout, that of
# cuComplex's float2/double2, with arithmetic; it converts to and from those.
complex64 = DType("complex64", "cuforge::complex<float>", 8, "c", 8, "ff", "cuforge_complex.cuh")
complex128 = DType("complex128", "cuforge::complex<double>", 16, "c", 16, "dd", "cuforge_complex.cuh")

SCALAR_TYPES: tuple[DType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, complex64, complex128,
)  # fmt: skip
_BY_NAME = {t.name: t for t in SCALAR_TYPES}
# NumPy dtype -> DType, filled on first use: `import cuforge` does not import NumPy (a NumPy
# dtype can only reach cuforge once the caller has imported NumPy).
_BY_NUMPY: dict[Any, DType] = {}
_bf16_checked = False


def dtype_of(value: Any) -> DType | None:
    """The cuforge dtype for a NumPy dtype (or dtype-like), a name, or a DType; else None."""
    global _bf16_checked
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    import numpy as np

    if not _BY_NUMPY:
        _BY_NUMPY.update({np.dtype(t.name): t for t in SCALAR_TYPES if t is not bfloat16})
    try:
        key = np.dtype(value)
    except TypeError:
        return None
    found = _BY_NUMPY.get(key)
    if found is None and not _bf16_checked and key.name == "bfloat16":
        _bf16_checked = True
        _BY_NUMPY[key] = bfloat16
        found = bfloat16
    return found


@dataclass(frozen=True, eq=False, repr=False)
class VectorDType(DType):
    """A CUDA vector type as an array's element: ``cf.vector(cf.float32, 4)`` is ``float4``.

    Only for arrays (``cf.In[cf.vector(cf.float32, 4)]``): such a parameter takes an array of
    the element dtype whose last dimension is the vector's length, C-contiguous and aligned to
    the vector's size, and the kernel gets a ``float4*``; the launch rule counts vectors.

    Examples
    --------
    >>> str(cf.vector(cf.float32, 4)), cf.vector(cf.float32, 4).itemsize
    ('float4', 16)
    """

    element: Any = None
    lanes: int = 1

    @property
    def numpy(self) -> np.dtype[Any]:
        """The NumPy dtype of one lane (an array of vectors is an array of these).

        Returns
        -------
        numpy.dtype
        """
        return self.element.numpy  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"cuforge.vector(cuforge.{self.element.name}, {self.lanes})"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # type: ignore[override]
        return vector, (self.element, self.lanes)


# (element, lanes) -> (C++ type, alignment): CUDA's built-in vector types (vector_types.h,
# cuda_fp16.h, cuda_bf16.h)
_VECTOR_TYPES = {
    ("float32", 2): ("float2", 8), ("float32", 4): ("float4", 16), ("float64", 2): ("double2", 16),
    ("int32", 2): ("int2", 8), ("int32", 4): ("int4", 16), ("uint32", 2): ("uint2", 8), ("uint32", 4): ("uint4", 16),
    ("int64", 2): ("longlong2", 16), ("uint64", 2): ("ulonglong2", 16),
    ("int16", 2): ("short2", 4), ("int16", 4): ("short4", 8), ("uint16", 2): ("ushort2", 4), ("uint16", 4): ("ushort4", 8),
    ("int8", 4): ("char4", 4), ("uint8", 4): ("uchar4", 4),
    ("float16", 2): ("__half2", 4), ("bfloat16", 2): ("__nv_bfloat162", 4),
    # no CUDA type: cuforge's, in templates/cuforge_vector.cuh (16 bytes, one 128-bit access)
    ("float16", 8): ("cuforge::float16x8", 16), ("bfloat16", 8): ("cuforge::bfloat16x8", 16),
}  # fmt: skip
_VECTORS: dict[tuple[str, int], VectorDType] = {}
# C++ spellings the headers also define, for %%cuda parameters and --signature
_VECTOR_ALIASES = {"half2": ("float16", 2), "nv_bfloat162": ("bfloat16", 2)}


def vector_named(name: str) -> VectorDType | None:
    """The vector type a name means: cuforge's (``float32x4``) or C++'s (``float4``,
    ``__half2``, ``half2``, ``cuforge::float16x8``); None for any other name."""
    for key, (cpp, _) in _VECTOR_TYPES.items():
        if name in (cpp, f"{key[0]}x{key[1]}"):
            return vector(_BY_NAME[key[0]], key[1])
    alias = _VECTOR_ALIASES.get(name)
    return vector(_BY_NAME[alias[0]], alias[1]) if alias is not None else None


def vector(dtype: DType, lanes: int) -> VectorDType:
    """The CUDA vector type of ``lanes`` ``dtype`` values, as an array element.

    Parameters
    ----------
    dtype : DType
        The lanes' type (``cf.float32``).
    lanes : int
        2 or 4, as CUDA defines the type (``float2``, ``float4``, ``__half2``, ...); 8 for
        float16 and bfloat16, which CUDA lacks: cuforge's 16-byte ``cuforge::float16x8`` and
        ``cuforge::bfloat16x8`` (lanes ``v[0..7]``, pairs ``h2(i)``).

    Returns
    -------
    VectorDType

    Raises
    ------
    DeclarationError
        Where CUDA has no such vector type; the message lists those it has.

    Examples
    --------
    >>> cf.In[cf.vector(cf.float32, 4)]
    In[float32x4]
    >>> str(cf.vector(cf.float16, 2))
    '__half2'
    """
    key = (getattr(dtype, "name", None), lanes)
    found = _VECTORS.get(key)  # type: ignore[arg-type]
    if found is None:
        if not isinstance(dtype, DType) or isinstance(dtype, VectorDType) or key not in _VECTOR_TYPES:
            have = ", ".join(f"({e}, {n})" for e, n in _VECTOR_TYPES)
            raise DeclarationError(f"cf.vector({dtype!r}, {lanes!r}) is no CUDA vector type; there are: {have}")
        cpp, align = _VECTOR_TYPES[key]  # type: ignore[index]
        header = "cuforge_vector.cuh" if cpp.startswith("cuforge::") else dtype.header
        found = _VECTORS.setdefault(key, VectorDType(  # type: ignore[arg-type]
            f"{dtype.name}x{lanes}", cpp, dtype.itemsize * lanes, "V", align, f"{dtype.itemsize * lanes}s", header,
            None, dtype, lanes))  # fmt: skip
    return found


_INTENTS = {"inout": "Array", "in": "In", "out": "Out"}


@dataclass(frozen=True)
class ArrayType:
    """A device-array parameter: element dtype, optional fixed rank, and intent.

    Built by ``cf.Array[dtype]``, ``cf.In[dtype]`` or ``cf.Out[dtype]``, optionally with a
    rank: ``cf.Array[cf.float32, 2]``; ``cf.Optional[...]`` of one sets ``optional``: the
    argument may then be None (or left out), which passes a null pointer.

    Examples
    --------
    >>> t = cf.In[cf.float32, 2]
    >>> t.dtype is cf.float32, t.ndim, t.writes
    (True, 2, False)
    """

    __module__ = "cuforge"

    dtype: Any  # a DType, or a family's type parameter
    ndim: int | None
    intent: str  # "inout", "in" or "out"
    optional: bool = False  # None passes a null pointer

    @property
    def writes(self) -> bool:
        """Whether the kernel may write the array (``Array`` and ``Out``).

        Returns
        -------
        bool
        """
        return self.intent != "in"

    def __repr__(self) -> str:
        rank = f", {self.ndim}" if self.ndim is not None else ""
        name = getattr(self.dtype, "name", self.dtype)
        text = f"{_INTENTS[self.intent]}[{name}{rank}]"
        return f"Optional[{text}]" if self.optional else text


class _ArrayFactory:
    _intent: ClassVar[str]

    def __class_getitem__(cls, item: Any) -> ArrayType:
        dtype, ndim = item if isinstance(item, tuple) and len(item) == 2 else (item, None)
        if isinstance(item, tuple) and len(item) not in (1, 2):
            raise DeclarationError(
                f"{cls.__name__}[...] takes a dtype and optionally a rank, got {item!r}; "
                f"write {cls.__name__}[cf.float32] or {cls.__name__}[cf.float32, 2]"
            )
        if not isinstance(dtype, DType) and not getattr(dtype, "_cuforge_typeparam", False):
            raise DeclarationError(f"{cls.__name__}[...] needs a cuforge dtype such as cf.float32, got {dtype!r}")
        if ndim is not None and (isinstance(ndim, bool) or not isinstance(ndim, int) or ndim < 1):
            raise DeclarationError(f"{cls.__name__}[{dtype!r}, {ndim!r}]: the rank must be a positive int")
        return ArrayType(dtype, ndim, cls._intent)


class Array(_ArrayFactory):
    """A read-write array parameter: ``cf.Array[cf.float32]`` renders ``float*``.

    Examples
    --------
    >>> cf.Array[cf.float32], cf.Array[cf.float32, 2].ndim
    (Array[float32], 2)
    """

    __module__ = "cuforge"
    _intent = "inout"


class In(_ArrayFactory):
    """A read-only array parameter: rendered ``const T* __restrict__``.

    Examples
    --------
    >>> cf.In[cf.float16].writes
    False
    """

    __module__ = "cuforge"
    _intent = "in"


class Out(_ArrayFactory):
    """A write-only array parameter: rendered ``T* __restrict__`` (do not pass one buffer for
    two ``Out``/``In`` parameters).

    Examples
    --------
    >>> cf.Out[cf.int32].writes
    True
    """

    __module__ = "cuforge"
    _intent = "out"


class Optional:
    """An array parameter that may be null: ``cf.Optional[cf.Out[cf.float32]]``.

    The argument may be None, or left out of the call (its default is None): the kernel then
    gets a null pointer, and the grid's default rule (the largest array) skips it. Any other
    argument is checked as the inner type says. The C++ is the inner type's (``float*
    __restrict__``): the kernel tests the pointer before using it.

    Examples
    --------
    >>> cf.Optional[cf.Out[cf.float32]]
    Optional[Out[float32]]
    >>> cf.Optional[cf.In[cf.float16, 2]].optional
    True
    """

    __module__ = "cuforge"

    def __class_getitem__(cls, item: Any) -> ArrayType:
        if not isinstance(item, ArrayType):
            raise DeclarationError(
                f"Optional[...] takes an array parameter type such as cf.In[cf.float32], got {item!r}; only a "
                f"pointer can be null, so a scalar cannot be Optional"
            )
        return dataclasses.replace(item, optional=True)


class TemplateParam:
    """What every template parameter of a family is: a name (the class attribute's), the
    allowed values in order (the first the default), and how a value is written in C++.
    The kinds: `TypeParam`, `IntParam` (and `BoolParam`),
    `ConstParam`.

    Examples
    --------
    >>> all(isinstance(p, cf.TemplateParam) for p in (cf.typeparam(cf.float32), cf.intparam(8), cf.constparam("N")))
    True
    """

    __module__ = "cuforge"
    _cuforge_typeparam = False
    kind = "?"
    cpp_kind = "?"  # how a body= kernel's template declares it: typename, int, bool, an enum type
    values: tuple[Any, ...] = ()
    name = "?"

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @property
    def default(self) -> Any:
        """The first allowed value, used where an instantiation does not name one.

        Returns
        -------
        object
        """
        return self.values[0]

    def resolve(self, value: Any, kernel: str) -> Any:  # pragma: no cover - each kind has its own
        """The allowed value ``value`` names (each kind says what it accepts).

        Parameters
        ----------
        value : object
            What an index or an instantiation gave.
        kernel : str
            The family's name, for the error.

        Returns
        -------
        object
        """
        raise NotImplementedError

    def spell(self, value: Any) -> str:  # pragma: no cover - each kind has its own
        """How ``value`` is written in the C++.

        Parameters
        ----------
        value : object

        Returns
        -------
        str
        """
        raise NotImplementedError


class TypeParam(TemplateParam):
    """A family's type parameter: ``T = cf.typeparam(cf.float16, cf.float32)``.

    The first allowed dtype is the default. In annotations it stands for the dtype of the
    instantiation (``x: cf.In[T]``); in the C++ it is a template parameter named as the
    class attribute; in Jinja ``{{ T }}`` renders the instantiation's C++ type and
    ``T.itemsize``, ``T.is_float``, ``T.name`` describe it.

    Examples
    --------
    >>> T = cf.typeparam(cf.float32, cf.float64)
    >>> T.values, T.default
    ((cuforge.float32, cuforge.float64), cuforge.float32)
    """

    __module__ = "cuforge"
    _cuforge_typeparam = True
    kind = "type"
    cpp_kind = "typename"

    def __init__(self, *dtypes: Any):
        if not dtypes:
            raise DeclarationError("cf.typeparam() needs at least one dtype, e.g. cf.typeparam(cf.float32, cf.float64)")
        resolved = []
        for d in dtypes:
            found = d if isinstance(d, DType) else None
            if found is None:
                raise DeclarationError(f"cf.typeparam(...) takes cuforge dtypes such as cf.float32, got {d!r}")
            if found in resolved:
                raise DeclarationError(f"cf.typeparam(...) lists {found.name} twice")
            resolved.append(found)
        self.values: tuple[DType, ...] = tuple(resolved)
        self.name = "?"

    @property
    def default(self) -> DType:
        """The first allowed dtype, used where an instantiation does not name one.

        Returns
        -------
        DType
        """
        return self.values[0]

    @property
    def cpp(self) -> str:
        """How the parameter is spelt in the C++ of an annotation: its name.

        Returns
        -------
        str
        """
        return self.name

    def resolve(self, value: Any, kernel: str) -> DType:
        """The allowed dtype ``value`` names (a DType, a NumPy dtype or a name).

        Parameters
        ----------
        value : DType, numpy.dtype or str
            What an index or an instantiation gave.
        kernel : str
            The family's name, for the error.

        Returns
        -------
        DType

        Raises
        ------
        DeclarationError
            Where ``value`` is not one of the allowed dtypes.
        """
        found = dtype_of(value) if not isinstance(value, (bool, int)) else None
        if found is None or found not in self.values:
            allowed = ", ".join(v.name for v in self.values)
            raise DeclarationError(f"{kernel}: template parameter {self.name} allows {allowed}; got {value!r}")
        return found

    def spell(self, value: DType) -> str:
        """How ``value`` is written in the C++ (``float``).

        Parameters
        ----------
        value : DType

        Returns
        -------
        str
        """
        return value.cpp

    def __repr__(self) -> str:
        return f"cuforge.typeparam({', '.join(v.name for v in self.values)})"


class IntParam(TemplateParam):
    """A family's integer parameter: ``BLOCK = cf.intparam(256, 128, 512)``; the first is the default.

    It becomes an ``int`` template parameter, and ``{{ BLOCK }}`` renders its value.

    Examples
    --------
    >>> cf.intparam(256, 128, 512).default
    256
    """

    __module__ = "cuforge"
    kind = "int"
    cpp_kind = "int"

    def __init__(self, *values: int):
        if not values:
            raise DeclarationError("cf.intparam() needs at least one value, e.g. cf.intparam(256, 128)")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or not -(2**31) <= v < 2**31:
                hint = "; for a C++ bool use cf.boolparam()" if isinstance(v, bool) else ""
                raise DeclarationError(f"cf.intparam(...) takes ints that fit a C++ int, got {v!r}{hint}")
        if len(set(values)) != len(values):
            raise DeclarationError(f"cf.intparam{values!r} lists a value twice")
        self.values: tuple[int, ...] = tuple(values)
        self.name = "?"

    @property
    def default(self) -> int:
        """The first allowed value, used where an instantiation does not name one.

        Returns
        -------
        int
        """
        return self.values[0]

    def resolve(self, value: Any, kernel: str) -> int:
        """The allowed value ``value`` names.

        Parameters
        ----------
        value : int
            What an index or an instantiation gave (any integer, not a bool).
        kernel : str
            The family's name, for the error.

        Returns
        -------
        int

        Raises
        ------
        DeclarationError
            Where ``value`` is not one of the allowed values.
        """
        try:
            as_int = None if isinstance(value, bool) else operator.index(value)
        except TypeError:
            as_int = None
        if as_int is None or as_int not in self.values:
            allowed = ", ".join(map(str, self.values))
            raise DeclarationError(f"{kernel}: template parameter {self.name} allows {allowed}; got {value!r}")
        return as_int

    def spell(self, value: int) -> str:
        """How ``value`` is written in the C++.

        Parameters
        ----------
        value : int

        Returns
        -------
        str
        """
        return str(value)

    def __repr__(self) -> str:
        return f"cuforge.intparam({', '.join(map(str, self.values))})"


class BoolParam(IntParam):
    """A family's bool parameter: ``POW2 = cf.boolparam()`` (default False) or
    ``cf.boolparam(True)``. A C++ ``bool`` template parameter: ``POW2`` is ``true`` or
    ``false`` in the C++, and ``{{ POW2 }}`` renders the same (``{% if POW2 %}`` works).

    Examples
    --------
    >>> cf.boolparam().values, cf.boolparam(True).spell(True)
    ((False, True), 'true')
    """

    __module__ = "cuforge"
    kind = "bool"
    cpp_kind = "bool"

    def __init__(self, default: bool = False):
        if not isinstance(default, bool):
            raise DeclarationError(f"cf.boolparam(default) takes True or False, got {default!r}")
        self.values: tuple[int, ...] = (default, not default)
        self.name = "?"

    def resolve(self, value: Any, kernel: str) -> int:
        """``value`` itself, which must be True or False.

        Parameters
        ----------
        value : bool
        kernel : str
            The family's name, for the error.

        Returns
        -------
        bool

        Raises
        ------
        DeclarationError
            Where ``value`` is not a bool.
        """
        if value is True or value is False:
            return value
        raise DeclarationError(f"{kernel}: template parameter {self.name} is a bool: True or False; got {value!r}")

    def spell(self, value: int) -> str:
        """``true`` or ``false``, as C++ spells them.

        Parameters
        ----------
        value : bool

        Returns
        -------
        str
        """
        return "true" if value else "false"

    def __repr__(self) -> str:
        return f"cuforge.boolparam({self.values[0]!r})"


class CppBool(int):
    """A bool parameter's value in Jinja: true in ``{% if %}``, rendered as C++ spells it."""

    def __str__(self) -> str:
        return "true" if self else "false"

    __repr__ = __str__


_CPP_CONSTANT = re.compile(r"-?[0-9]+[uUlL]*\Z|(::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*\Z")
_CPP_TYPE = re.compile(r"(::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*( [A-Za-z_]\w*)*\Z")


class ConstParam(TemplateParam):
    """A family's parameter whose values are C++ constants as C++ spells them: enumerators
    such as CUB's ``cub::BLOCK_SCAN_RAKING``, or named constants. The first is the default.

    The values go into the name expressions (``scan<cub::BLOCK_SCAN_RAKING>``) and ``{{ ALGO }}``
    as written. A ``source=`` family declares the template parameter's type in its own C++;
    a ``body=`` family needs ``cpp_type`` to declare it.

    Examples
    --------
    >>> p = cf.constparam("cub::BLOCK_SCAN_RAKING", "cub::BLOCK_SCAN_WARP_SCANS", cpp_type="cub::BlockScanAlgorithm")
    >>> p.default, p.cpp_kind
    ('cub::BLOCK_SCAN_RAKING', 'cub::BlockScanAlgorithm')
    """

    __module__ = "cuforge"
    kind = "const"

    def __init__(self, *spellings: str, cpp_type: str | None = None):
        if not spellings:
            raise DeclarationError(
                'cf.constparam() needs at least one C++ constant, e.g. cf.constparam("cub::BLOCK_SCAN_RAKING", '
                '"cub::BLOCK_SCAN_WARP_SCANS", cpp_type="cub::BlockScanAlgorithm")'
            )
        for v in spellings:
            if not isinstance(v, str) or not _CPP_CONSTANT.match(v):
                raise DeclarationError(
                    f"cf.constparam(...) takes C++ constants as strings: a (qualified) name such as "
                    f"'cub::BLOCK_SCAN_RAKING' or an integer literal; got {v!r}"
                )
        if len(set(spellings)) != len(spellings):
            raise DeclarationError(f"cf.constparam{spellings!r} lists a value twice")
        if cpp_type is not None and (not isinstance(cpp_type, str) or not _CPP_TYPE.match(cpp_type)):
            raise DeclarationError(
                f"cf.constparam(..., cpp_type=...) takes the C++ type of the template parameter, such as "
                f"'cub::BlockScanAlgorithm' or 'unsigned int'; got {cpp_type!r}"
            )
        self.values: tuple[str, ...] = tuple(spellings)
        self.cpp_type = cpp_type
        self.name = "?"

    @property
    def cpp_kind(self) -> str:  # type: ignore[override]
        """The C++ type that declares the parameter in a ``body=`` kernel's template.

        Returns
        -------
        str
            ``cpp_type``, or ``"?"`` where none was given (a ``source=`` family needs none).
        """
        return self.cpp_type or "?"

    def resolve(self, value: Any, kernel: str) -> str:
        """``value`` itself, which must be one of the declared spellings.

        Parameters
        ----------
        value : str
        kernel : str
            The family's name, for the error.

        Returns
        -------
        str

        Raises
        ------
        DeclarationError
            Where ``value`` is not one of the declared spellings.
        """
        if isinstance(value, str) and value in self.values:
            return value
        allowed = ", ".join(self.values)
        raise DeclarationError(f"{kernel}: template parameter {self.name} allows {allowed}; got {value!r}")

    def spell(self, value: str) -> str:
        """``value`` as written.

        Parameters
        ----------
        value : str

        Returns
        -------
        str
        """
        return value

    def __repr__(self) -> str:
        typed = f", cpp_type={self.cpp_type!r}" if self.cpp_type else ""
        return f"cuforge.constparam({', '.join(map(repr, self.values))}{typed})"


def typeparam(*dtypes: Any) -> TypeParam:
    """Declare a family's type parameter.

    Parameters
    ----------
    *dtypes : DType
        The allowed dtypes, in order; the first is the default.

    Returns
    -------
    TypeParam

    Raises
    ------
    DeclarationError
        With no dtype, a dtype listed twice, or something that is not a cuforge dtype.

    Examples
    --------
    >>> @cf.kernel
    ... class Fill:
    ...     T = cf.typeparam(cf.float32, cf.float64)
    ...     out: cf.Out[T]
    ...     value: T
    ...     body = "out[threadIdx.x] = value;"
    >>> Fill[cf.float64]
    <cuforge.Kernel Fill<double>(out: Out[float64], value: float64)>
    """
    return TypeParam(*dtypes)


def intparam(*values: int) -> IntParam:
    """Declare a family's integer parameter (a C++ ``int`` template parameter).

    Parameters
    ----------
    *values : int
        The allowed values, in order; the first is the default.

    Returns
    -------
    IntParam

    Raises
    ------
    DeclarationError
        With no value, a value listed twice, or one that is not an int fitting a C++ int.

    Examples
    --------
    >>> @cf.kernel
    ... class Tiled:
    ...     TILE = cf.intparam(16, 32)
    ...     x: cf.Array[cf.float32]
    ...     body = "x[threadIdx.x] *= TILE;"
    >>> [k.template_args["TILE"] for k in Tiled.instantiations()]
    [16, 32]
    """
    return IntParam(*values)


def boolparam(default: bool = False) -> BoolParam:
    """Declare a family's bool parameter (a C++ ``bool`` template parameter).

    Parameters
    ----------
    default : bool
        The value used where an instantiation does not name one.

    Returns
    -------
    BoolParam

    Raises
    ------
    DeclarationError
        Where ``default`` is not a bool.

    Examples
    --------
    >>> @cf.kernel
    ... class Reduce:
    ...     POW2 = cf.boolparam()
    ...     x: cf.Array[cf.float32]
    ...     body = "if (POW2) x[0] = 1;"
    >>> Reduce[True].name_expression
    'Reduce<true>'
    """
    return BoolParam(default)


def constparam(*spellings: str, cpp_type: str | None = None) -> ConstParam:
    """Declare a family's parameter whose values are C++ constants (enumerators such as CUB's
    ``BlockScanAlgorithm``), given as C++ spells them.

    Parameters
    ----------
    *spellings : str
        The allowed values, in order; the first is the default. Each a (qualified) name or an
        integer literal.
    cpp_type : str, optional
        The C++ type of the template parameter (``"cub::BlockScanAlgorithm"``): needed by a
        ``body=`` family, whose generated template declares it (its header goes in
        ``preamble``); a ``source=`` family declares it in its own C++.

    Returns
    -------
    ConstParam

    Raises
    ------
    DeclarationError
        With no value, a value listed twice, or one that is no C++ name or integer literal.

    Examples
    --------
    >>> @cf.kernel
    ... class Pick:
    ...     MODE = cf.constparam("Mode::Fast", "Mode::Exact", cpp_type="Mode")
    ...     x: cf.Array[cf.float32]
    ...     preamble = "enum class Mode { Fast, Exact };"
    ...     body = "if (MODE == Mode::Exact) x[threadIdx.x] = 0;"
    >>> Pick["Mode::Exact"].name_expression
    'Pick<Mode::Exact>'
    """
    return ConstParam(*spellings, cpp_type=cpp_type)
