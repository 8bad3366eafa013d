"""A corpus of hostile launch calls for the conftest Saxpy kernel (a: float32, x: In[float32],
y: Array[float32], n: int64): each must be refused before any CUDA call, with a CuforgeError
that names the kernel and the parameter or option. Run on the CPU against both paths'
check_and_pack (tests/unit/test_hostile.py) and on the GPU against the real call."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

F32 = np.float32


def corpus(x: Any, y: Any, x64: Any, strided: Any, readonly: Any) -> list[tuple[str, tuple, dict, str]]:
    """(what, args, kwargs, the message's regex); the arrays are device arrays of 64 float32
    (x, y), float64 (x64), non-contiguous (strided), read-only (readonly)."""
    ok = (2.0, x, y, 64)
    return [
        ("too few arguments", (2.0, x, y), {}, r"Saxpy: missing argument 'n'"),
        ("too many arguments", (*ok, 5), {}, r"Saxpy: takes 4 arguments"),
        ("unknown keyword", ok, {"m": 1}, r"Saxpy: unexpected argument 'm'"),
        ("argument twice", ok, {"n": 64}, r"Saxpy: argument 'n' given twice"),
        ("float64 array", (2.0, x64, y, 64), {}, r"Saxpy: argument 'x' expects In\[float32\], got a float64 array"),
        ("non-contiguous", (2.0, x, strided, 64), {}, r"Saxpy: argument 'y' expects Array\[float32\], got a non-C-contiguous"),
        ("read-only output", (2.0, x, readonly, 64), {}, r"Saxpy: argument 'y' expects Array\[float32\], got a read-only"),
        ("list for an array", (2.0, [1.0] * 64, y, 64), {}, r"Saxpy: argument 'x' expects In\[float32\], got a list"),
        ("None for an array", (2.0, None, y, 64), {}, r"Saxpy: argument 'x' expects In\[float32\], got NoneType None"),
        ("string for a scalar", ("2", x, y, 64), {}, r"Saxpy: argument 'a' expects float32, got str '2'"),
        ("None for a scalar", (None, x, y, 64), {}, r"Saxpy: argument 'a' expects float32, got NoneType None"),
        ("complex for float", (1j, x, y, 64), {}, r"Saxpy: argument 'a' expects float32, got complex"),
        ("float overflow", (1e39, x, y, 64), {}, r"Saxpy: argument 'a' expects float32, got float 1e\+39; the value overflows"),
        ("int too large", (2.0, x, y, 2**63), {}, r"Saxpy: argument 'n' expects int64, got int 9223372036854775808"),
        ("int too small", (2.0, x, y, -(2**63) - 1), {}, r"Saxpy: argument 'n' expects int64, got int -9223372036854775809"),
        ("float for an int", (2.0, x, y, 64.0), {}, r"Saxpy: argument 'n' expects int64, got float 64.0; pass an int"),
        ("nan for an int", (2.0, x, y, math.nan), {}, r"Saxpy: argument 'n' expects int64, got float nan"),
        ("bool for a float", (True, x, y, 64), {}, r"Saxpy: argument 'a' expects float32, got bool True"),
        ("numpy float64 not exact", (np.float64(0.1), x, y, 64), {}, r"Saxpy: argument 'a' expects float32, got numpy.float64 .*the value is not exact in float32"),
        ("numpy complex", (np.complex64(1), x, y, 64), {}, r"Saxpy: argument 'a' expects float32, got a numpy.complex64"),
        ("float block", ok, {"block": (256.0,)}, r"Saxpy: block\[0\] expects an int from 1 to 1024, got 256.0"),
        ("block too large", ok, {"block": 2048}, r"Saxpy: block\[0\] expects an int from 1 to 1024, got 2048"),
        ("block volume", ok, {"block": (64, 64)}, r"Saxpy: block=\(64, 64\) has 4096 threads; a block holds at most 1024"),
        ("zero block", ok, {"block": 0}, r"Saxpy: block\[0\] expects an int from 1 to 1024, got 0"),
        ("four dims", ok, {"grid": (1, 1, 1, 1)}, r"Saxpy: grid expects an int or a tuple of 1 to 3 ints"),
        ("float grid", ok, {"grid": 1.5}, r"Saxpy: grid expects an int or a tuple of 1 to 3 ints, got float 1.5"),
        ("negative grid", ok, {"grid": -1}, r"Saxpy: grid\[0\] expects an int from 1 to 2147483647, got -1"),
        ("grid y too large", ok, {"grid": (1, 70000)}, r"Saxpy: grid\[1\] expects an int from 1 to 65535, got 70000"),
        ("string grid", ok, {"grid": "10"}, r"Saxpy: grid expects an int or a tuple of 1 to 3 ints, got str '10'"),
        ("negative shared_mem", ok, {"shared_mem": -1}, r"Saxpy: shared_mem expects an int from 0 to 4294967295"),
        ("huge shared_mem", ok, {"shared_mem": 2**32}, r"Saxpy: shared_mem expects an int from 0 to 4294967295"),
        ("float shared_mem", ok, {"shared_mem": 1024.0}, r"Saxpy: shared_mem expects an int from 0 to 4294967295"),
        ("string stream", ok, {"stream": "default"}, r"Saxpy: stream expects a stream .*, got str 'default'"),
        ("negative stream", ok, {"stream": -1}, r"Saxpy: stream expects a CUstream handle \(0 to 2\*\*64-1\), got -1"),
        ("float stream", ok, {"stream": 0.0}, r"Saxpy: stream expects a stream .*, got float 0.0"),
        ("bad cluster", ok, {"cluster": (0,)}, r"Saxpy: cluster expects an int or a tuple of 1 to 3 positive ints"),
        ("bad cooperative", ok, {"cooperative": "yes"}, r"Saxpy: cooperative expects True or False, got 'yes'"),
        ("bad device", ok, {"device": "gpu"}, r"Saxpy: device expects 'cpu', 'cuda', 'cuda:N' or a CUDA device ordinal N \(an int >= 0\), got 'gpu'"),
        ("bad device number", ok, {"device": "cuda:-1"}, r"Saxpy: device expects 'cpu', 'cuda', 'cuda:N' .*, got 'cuda:-1'"),
    ]
