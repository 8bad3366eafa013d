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

Where cuforge's C extension is built, each kernel gets the C twin of that function
(``_claunch.Launcher``): the same checks in the same order, with the parameters packed on the
C stack and cuLaunchKernel called directly, about 1 us cheaper per launch than the Python
twin with its cuda.bindings call. The Python twin stays the reference (a GPU test compares
the two call by call) and the fallback where no compiler was present.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from . import _cuda, _launch
from ._arrays import DeviceArray
from .types import ArrayType

_claunch = _cuda._claunch
if _claunch is not None:
    _claunch.configure(_cuda, _launch._BY_NUMPY, _launch._torch_dtypes, DeviceArray)

if TYPE_CHECKING:
    from .kernel import Kernel

_INT_RANGES = _launch._INT_RANGES
_FLOAT_LIMITS = {"float16": 65504.0, "float32": _launch._F32_MAX, "float64": math.inf}
_C_MAX_PARAMS, _C_MAX_BYTES = 256, 4096  # MAX_PARAMS and MAX_PARAM_BYTES in _claunch.c


def build(kernel: Kernel) -> Any:
    """The fast launch function for ``kernel``: its C twin (``_claunch.Launcher``) when the C
    launcher is built and handles the signature, else the generated Python function; None when
    the signature has parameters neither handles (complex or bfloat16 scalars): those always
    take the general path."""
    if _claunch is not None:
        launcher = _c_launcher(kernel, _Twin(kernel))
        if launcher is not None:
            return launcher
    return _build_python(kernel)


def _grid_source(kernel: Kernel) -> int:
    """What a launch without grid= sizes its grid by, for both launch functions: -1 the largest
    array, k the value or size of parameter k, -2 a grid function (the general path calls it).
    kernel.py has refused a default rule with no array to size by."""
    rule = kernel._decl.grid
    if rule is None:
        return -1
    return kernel.signature.names.index(rule) if isinstance(rule, str) else -2


class _Twin:
    """The Python twin of a C launch function, generated on its first call: compiling it costs
    about a millisecond per kernel, which a warm start should not pay while the C one serves."""

    __slots__ = ("_fn", "_kernel")

    def __init__(self, kernel: Kernel) -> None:
        self._kernel, self._fn = kernel, None

    def __call__(self, args: tuple[Any, ...], grid: Any, block: Any, shared_mem: Any, stream: Any) -> bool:
        fn = self._fn
        if fn is None:
            fn = self._fn = _build_python(self._kernel)
        return fn(args, grid, block, shared_mem, stream)  # type: ignore[no-any-return]


def _c_launcher(kernel: Kernel, py_fast: Any) -> Any:
    """The C twin of ``py_fast`` (which it calls until a device is made current, and whenever
    CUFORGE_LAUNCHER=bindings), or None for signatures it does not take (float16 scalars)."""
    params = kernel.signature.params
    specs: list[tuple[Any, ...]] = []
    for p, (offset, size) in zip(params, kernel.signature.layout()):
        if p.is_array:
            ndim = -1 if p.type.ndim is None else p.type.ndim
            specs.append(("a", size, offset, ndim, 0, 0, 0.0, p.dtype))
        elif p.dtype.is_integer:
            lo, hi = _INT_RANGES[p.dtype.name]
            specs.append(("i" if lo < 0 else "u", size, offset, -1, lo, hi, 0.0, None))
        elif p.dtype.name in ("float32", "float64"):
            specs.append(("f" if size == 4 else "d", size, offset, -1, 0, 0, _FLOAT_LIMITS[p.dtype.name], None))
        elif p.dtype.kind == "b":
            specs.append(("b", size, offset, -1, 0, 0, 0.0, None))
        else:
            return None
    if len(params) > _C_MAX_PARAMS or kernel._packer.size > _C_MAX_BYTES:
        return None
    return _claunch.Launcher(
        tuple(specs), kernel.label, kernel._by_device, _launch._DIMS, id(_launch.GRID_LIMIT),
        id(_launch.BLOCK_LIMIT), kernel._block, _grid_source(kernel), _launch.GRID_LIMIT[0], _launch.stream_handle,
        functools.partial(_launch.raise_launch_error, kernel=kernel.label), py_fast,
    )  # fmt: skip


def _build_python(kernel: Kernel) -> Any:
    """The generated Python launch function (see the module docstring), or None."""
    params = kernel.signature.params
    ns: dict[str, Any] = {
        "FT": _launch.FAST_TYPES,
        "DEV": DeviceArray,
        "BYNP": _launch._BY_NUMPY,
        "BYTORCH": _launch._torch_dtypes,
        "CUDA": _cuda,
        "TLS": _cuda._tls,
        "BYDEV": kernel._by_device,
        "DIMS": _launch._DIMS,
        "GRID_ID": id(_launch.GRID_LIMIT),
        "BLOCK_ID": id(_launch.BLOCK_LIMIT),
        "GRID_MAX": _launch.GRID_LIMIT[0],
        "BLOCK": kernel._block,
        # The last grid= and block= seen with their checked values: callers pass the same
        # tuple (often a constant of their code) every time, so one `is` test finds them.
        "LAST_GRID": [(None, None)],
        "LAST_BLOCK": [(None, None)],
        "NAME": kernel.label,
        "STREAM": _launch.stream_handle,
        "RAISE": _launch.raise_launch_error,
        "PACKER": kernel._packer,
        "PACK": kernel._packer.struct.pack_into,
        "PTLS": kernel._packer._tls,
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
        # All checks above: the first CUDA call (current_device starts CUDA in a new thread).
        "    dev = getattr(TLS, 'device', None) or CUDA.current_device()",
        "    did = dev.id",
    ]
    if arrays:
        lines.append(f"    if {' or '.join(f'd{p.index} != did' for p, _ in arrays)}: return False")
    lines += [
        "    found = BYDEV.get(did)",
        "    if found is None: return False",  # first launch on this device: compile and load there
        *_dims_lines("block", "blk", "BLOCK_ID", "LAST_BLOCK", "        blk = BLOCK"),
    ]
    sized_by = _grid_source(kernel)
    if sized_by == -1:
        sizes = ", ".join(f"s{p.index}" for p, _ in arrays)
        count = f"max({sizes})" if len(arrays) > 1 else sizes
    elif sized_by >= 0:
        count = f"{'s' if params[sized_by].is_array else 'a'}{sized_by}"
    else:
        count = ""  # a grid function: the general path calls it
    default_grid = (
        [f"        count = {count}", "        if count <= 0: return False", "        g = (count + blk[0] - 1) // blk[0]",
         "        if g > GRID_MAX: return False", "        grd = (g, 1, 1)"]
        if count else ["        return False"]
    )  # fmt: skip
    lines += [
        *_dims_lines("grid", "grd", "GRID_ID", "LAST_GRID", *default_grid),
        "    if sh is None:",
        "        sh = 0 if origin == 0 else FT.cupy_stream().ptr if origin == 1 else FT.torch_stream(did)",
        "    bufs = getattr(PTLS, 'bufs', None) or PACKER.thread_buffers()",
        f"    PACK(bufs[0], 0, {', '.join(f'p{p.index}' if p.is_array else f'a{p.index}' for p in params)})",
        "    CUDA.note_launch(NAME, grd, blk, shared_mem)",
        "    err = CUDA.launch(found[0], grd, blk, shared_mem, sh, bufs[2])",
        "    if err: RAISE(err, grd, blk, shared_mem, NAME)",
        "    return True",
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<cuforge fast launch of {kernel.label}>", "exec"), ns)
    fast = ns["fast"]
    fast.source = source
    return fast


def _dims_lines(arg: str, out: str, limit_id: str, last: str, *when_none: str) -> list[str]:
    """Lines setting ``out`` to the checked 3-tuple of the grid= or block= argument ``arg``:
    the last one seen by identity, else a valid value memoised by ``_launch.dims``, else
    return False (the general path checks it and explains what is wrong)."""
    return [
        f"    if {arg} is None:",
        *when_none,
        "    else:",
        f"        seen = {last}[0]",
        f"        if {arg} is seen[0]:",
        f"            {out} = seen[1]",
        "        else:",
        "            try:",
        f"                {out} = DIMS.get(({arg}, {limit_id}))",
        "            except TypeError:",
        "                return False",
        f"            if {out} is None: return False",
        f"            {last}[0] = ({arg}, {out})",
    ]
