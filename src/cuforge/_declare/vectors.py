"""CUDA vector types as array elements: `VectorDType` and `vector` (``cf.vector(cf.float32, 4)``
is ``float4``), with the table of the vector types CUDA (and cuforge's header) defines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import DeclarationError
from .dtypes import DType, dtype_of

if TYPE_CHECKING:
    import numpy as np

__all__ = ["VectorDType", "vector", "vector_named"]


class VectorDType(DType):
    """A CUDA vector type as an array's element: ``cf.vector(cf.float32, 4)`` is ``float4``.

    As an array's element (``cf.In[cf.vector(cf.float32, 4)]``) a parameter takes an array of
    the element dtype whose last dimension is the vector's length, C-contiguous and aligned to
    the vector's alignment, and the kernel gets a ``float4*``; the launch rule counts vectors.
    As a scalar (``colors: cf.vector(cf.uint8, 4)``) the kernel gets a ``uchar4`` by value and
    the launch takes a tuple (or list) of ``lanes`` numbers, each checked as the element type
    checks a scalar, or a NumPy array of shape ``(lanes,)`` and the element's dtype.

    Examples
    --------
    >>> str(cf.vector(cf.float32, 4)), cf.vector(cf.float32, 4).itemsize
    ('float4', 16)
    """

    __module__ = "cuforge"

    element: Any
    lanes: int

    __match_args__ = (*DType.__match_args__, "element", "lanes")

    def __init__(self, name: str, cpp: str, itemsize: int, kind: str, align: int, pack: str, header: str | None = None,
                 max_finite: float | None = None, element: Any = None, lanes: int = 1) -> None:  # fmt: skip
        super().__init__(name, cpp, itemsize, kind, align, pack, header, max_finite)
        self.__dict__.update(element=element, lanes=lanes)

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
    ("float32", 3): ("float3", 4), ("float64", 3): ("double3", 8), ("int32", 3): ("int3", 4), ("uint32", 3): ("uint3", 4),
    # CUDA 13 deprecates the 16-byte-aligned double4/longlong4 for double4_16a and double4_32a: cuforge's
    # 4-lane 64-bit vectors are the 32-byte-aligned ones (32 bytes, one 256-bit access where the GPU has it)
    ("float64", 4): ("double4_32a", 32), ("int64", 4): ("longlong4_32a", 32), ("uint64", 4): ("ulonglong4_32a", 32),
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
            break
    else:
        if name not in _VECTOR_ALIASES:
            return None
        key = _VECTOR_ALIASES[name]
    element = dtype_of(key[0])
    assert element is not None  # the tables name scalar dtypes only
    return vector(element, key[1])


def vector(dtype: DType, lanes: int) -> VectorDType:
    """The CUDA vector type of ``lanes`` ``dtype`` values, as an array element or a by-value scalar.

    Parameters
    ----------
    dtype : DType
        The lanes' type (``cf.float32``).
    lanes : int
        2, 3 or 4, as CUDA defines the type (``float2``, ``float3``, ``float4``, ``__half2``, ...;
        the 4-lane 64-bit ones are CUDA 13's 32-byte-aligned ``double4_32a``, ``longlong4_32a``
        and ``ulonglong4_32a``, since it deprecates ``double4``); 8 for
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
            raise DeclarationError(
                f"cf.vector({dtype!r}, {lanes!r}) is not a vector type cuforge knows; it knows (element, lanes): {have} "
                f"(CUDA's 1-lane types such as float1 are their element: use the scalar dtype)"
            )
        cpp, align = _VECTOR_TYPES[key]  # type: ignore[index]
        header = "cuforge_vector.cuh" if cpp.startswith("cuforge::") else dtype.header
        found = _VECTORS.setdefault(key, VectorDType(  # type: ignore[arg-type]
            f"{dtype.name}x{lanes}", cpp, dtype.itemsize * lanes, "V", align, f"{dtype.itemsize * lanes}s", header,
            None, dtype, lanes))  # fmt: skip
    return found
