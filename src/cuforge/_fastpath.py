"""A launch function generated per kernel for the common case, as Triton's launcher is.

The general path (``Kernel._resolve``) calls one checker per argument, builds a list of
array descriptions and walks it several times: correct for every input, and a few
microseconds of Python per launch. The function generated here makes the same checks for
the inputs it understands (positional arguments; Python ``int``/``float``/``bool`` scalars
in range; CuPy, PyTorch and cuforge arrays of the exact dtype and rank, C-contiguous, on the
launching device; the default or a parameter-named grid rule) inline, in one pass, and
launches. For anything else it returns False before any CUDA call and the general path runs,
raising the same errors it always does: nothing is accepted here that the general path would
reject.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from . import _cuda, _launch
from ._arrays import DeviceArray
from .types import ArrayType

if TYPE_CHECKING:
    from .kernel import Kernel

_INT_RANGES = _launch._INT_RANGES
_FLOAT_LIMITS = {"float16": 65504.0, "float32": _launch._F32_MAX, "float64": math.inf}


def build(kernel: Kernel) -> Any:
    """The fast launch function for ``kernel``, or None when its signature has parameters the
    fast path does not handle (complex or bfloat16 scalars): those always take the general path."""
    params = kernel.signature.params
    ns: dict[str, Any] = {
        "FT": _launch.FAST_TYPES,
        "DEV": DeviceArray,
        "BYNP": _launch._BY_NUMPY,
        "BYTORCH": _launch._torch_dtypes,
        "CUDA": _cuda,
        "BYDEV": kernel._by_device,
        "DIMS": _launch._DIMS,
        "GRID_ID": id(_launch.GRID_LIMIT),
        "BLOCK_ID": id(_launch.BLOCK_LIMIT),
        "GRID_MAX": _launch.GRID_LIMIT[0],
        "BLOCK": kernel._block,
        "NAME": kernel.label,
        "STREAM": _launch.stream_handle,
        "DEFAULT_STREAM": _launch.fast_default_stream,
        "RAISE": _launch.raise_launch_error,
        "PACKER": kernel._packer,
    }
    names = [f"a{p.index}" for p in params]
    lines = [
        "def fast(args, grid, block, shared_mem, stream):",
        f"    if len(args) != {len(params)}: return False",
    ]
    if params:
        lines.append(f"    {', '.join(names)}, = args")
    arrays = []
    for p, v in zip(params, names):
        if isinstance(p.type, ArrayType):
            arrays.append((p, v))
            continue
        dt = p.type
        if dt.is_integer:
            lo, hi = _INT_RANGES[dt.name]
            lines.append(f"    if {v}.__class__ is not int or not {lo} <= {v} <= {hi}: return False")
        elif dt.name in _FLOAT_LIMITS:
            lim = _FLOAT_LIMITS[dt.name]
            bound = "" if math.isinf(lim) else f" or not -{lim!r} <= {v} <= {lim!r}"
            lines.append(f"    if {v}.__class__ is not float{bound}: return False")
        elif dt.kind == "b":
            lines.append(f"    if {v}.__class__ is not bool: return False")
        else:
            return None  # complex (packed as two values) and bfloat16 (bits): general path only
    lines.append("    origin = 0")  # 1: a CuPy array, 2: a PyTorch tensor (for the default stream)
    for p, v in arrays:
        i = p.index
        ns[f"CF{i}"] = p.dtype
        rank = "" if p.type.ndim is None else f" or {v}.ndim != {p.type.ndim}"
        own_rank = "" if p.type.ndim is None else f" or len({v}.shape) != {p.type.ndim}"
        lines += [
            f"    t = {v}.__class__",
            "    if t is FT.cupy:",
            f"        if BYNP.get({v}.dtype) is not CF{i} or not {v}._c_contiguous{rank}: return False",
            f"        m = {v}.data; p{i} = m.ptr; d{i} = m.device_id; s{i} = {v}.size; origin = origin or 1",
            "    elif t is DEV:",
            f"        if {v}.dtype is not CF{i}{own_rank}: return False",
            f"        p{i} = {v}.ptr; d{i} = {v}.device_id; s{i} = {v}.size",
            "    elif t is FT.torch:",
            f"        if BYTORCH.get({v}.dtype) is not CF{i} or not {v}.is_contiguous(){rank}: return False",
            f"        p{i} = {v}.data_ptr(); d{i} = {v}.get_device(); s{i} = {v}.numel(); origin = origin or 2",
            "    else:",
            "        return False",
        ]
    lines += [
        "    if shared_mem.__class__ is not int or shared_mem < 0: return False",
        "    sh = None if stream is None else stream if stream.__class__ is int else STREAM(stream, NAME)",
        "    dev = CUDA.current_device()",  # all checks above: the first CUDA call
        "    did = dev.id",
    ]
    if arrays:
        lines.append(f"    if {' or '.join(f'd{p.index} != did' for p, _ in arrays)}: return False")
    lines += [
        "    found = BYDEV.get(did)",
        "    if found is None: return False",  # first launch on this device: compile and load there
        "    if block is None:",
        "        blk = BLOCK",
        "    else:",
        "        try:",
        "            blk = DIMS.get((block, BLOCK_ID))",
        "        except TypeError:",  # unhashable: the general path explains what is wrong
        "            return False",
        "        if blk is None: return False",
        "    if grid is None:",
    ]
    rule = kernel._decl.grid
    if rule is None and arrays:
        sizes = ", ".join(f"s{p.index}" for p, _ in arrays)
        lines.append(f"        count = max({sizes})" if len(arrays) > 1 else f"        count = {sizes}")
    elif isinstance(rule, str) and not isinstance(kernel.signature.params[kernel.signature.names.index(rule)].type, ArrayType):
        lines.append(f"        count = a{kernel.signature.names.index(rule)}")
    elif isinstance(rule, str):
        lines.append(f"        count = s{kernel.signature.names.index(rule)}")
    else:
        lines.append("        return False")  # a grid function: the general path calls it
    lines += [
        "        if count <= 0: return False",
        "        g = (count + blk[0] - 1) // blk[0]",
        "        if g > GRID_MAX: return False",
        "        grd = (g, 1, 1)",
        "    else:",
        "        try:",
        "            grd = DIMS.get((grid, GRID_ID))",
        "        except TypeError:",
        "            return False",
        "        if grd is None: return False",
        "    if sh is None:",
        "        sh = DEFAULT_STREAM(origin, did) if origin else 0",
        "    buf, addr = PACKER.buffers()",
        f"    PACKER.struct.pack_into(buf, 0, {', '.join(f'p{p.index}' if p.is_array else f'a{p.index}' for p in params)})",
        "    CUDA.last_launch = (NAME, grd, blk, shared_mem)",
        "    err = CUDA.driver.cuLaunchKernel(",
        "        found[0], grd[0], grd[1], grd[2], blk[0], blk[1], blk[2], shared_mem, sh, addr, 0",
        "    )[0]",
        "    if err: RAISE(err, grd, blk, shared_mem, NAME)",
        "    return True",
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<cuforge fast launch of {kernel.label}>", "exec"), ns)
    fast = ns["fast"]
    fast.source = source
    return fast
