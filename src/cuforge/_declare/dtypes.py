"""The scalar dtypes: `DType`, the module constants (``cf.float32``), and `dtype_of`.

A `DType` is a value: it knows its C++ spelling (``str(cf.float32) == "float"``, so
``{{ T }}`` in a template renders C++), its NumPy dtype, its size and alignment, the
``struct`` code a scalar is packed with, and the header NVRTC needs for it. Declared types are
resolved when a kernel class is defined, never on the launch path.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .._frozen import Frozen
from ..errors import DeclarationError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DType",
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


class DType(Frozen):
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
    header: str | None
    max_finite: float | None

    __match_args__ = ("name", "cpp", "itemsize", "kind", "align", "pack", "header", "max_finite")

    def __init__(self, name: str, cpp: str, itemsize: int, kind: str, align: int, pack: str, header: str | None = None,
                 max_finite: float | None = None) -> None:  # fmt: skip
        self.__dict__.update(name=name, cpp=cpp, itemsize=itemsize, kind=kind, align=align, pack=pack, header=header,
                             max_finite=max_finite)  # fmt: skip

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
BY_NAME = {t.name: t for t in SCALAR_TYPES}
# NumPy dtype -> DType, filled on first use: `import cuforge` does not import NumPy (a NumPy
# dtype can only reach cuforge once the caller has imported NumPy).
BY_NUMPY: dict[Any, DType] = {}
_bf16_checked = False


def dtype_of(value: Any) -> DType | None:
    """The cuforge dtype for a NumPy dtype (or dtype-like), a name, or a DType; else None."""
    global _bf16_checked
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in BY_NAME:
        return BY_NAME[value]
    import numpy as np

    if not BY_NUMPY:
        BY_NUMPY.update({np.dtype(t.name): t for t in SCALAR_TYPES if t is not bfloat16})
    try:
        key = np.dtype(value)
    except TypeError:
        return None
    found = BY_NUMPY.get(key)
    if found is None and not _bf16_checked and key.name == "bfloat16":
        _bf16_checked = True
        BY_NUMPY[key] = bfloat16
        found = bfloat16
    return found
