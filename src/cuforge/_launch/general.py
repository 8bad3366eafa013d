"""The general launch path: binding, checks, the launch configuration and the launch itself.

A kernel call goes first to the C launcher (``_csrc/``), which accepts the common cases
and launches them. Whatever it declines comes here (and every call does where the extension
is not built): `check_and_pack` binds and checks the arguments with the per-parameter
checkers of ``checks`` (no CUDA call), and `launch_checked` finds the device, stages
host NumPy arrays, picks the stream and makes the one driver call. Each takes the kernel's
`LaunchPlan`. The rules that both paths follow (the default stream here, the grid/block
limits and the default grid in ``_declare.launch_rules``) are defined once; the C launcher
reads their data (``claunch``).
"""

from __future__ import annotations

from typing import Any

from .._declare import kinds as _kinds
from .._declare.launch_rules import BLOCK_LIMIT, CALL_OPTIONS, GRID_LIMIT, SHARED_MEM_MAX, dims, exact_ints
from .._declare.spelling import describe
from .._frozen import Record
from .._runtime import cuda as _cuda
from .._runtime import limits as _limits
from .._runtime.arrays import HOST, LIBRARIES, UNKNOWN_DEVICE, ArrayArg
from .._runtime.device import state as _state
from .._runtime.launch import LaunchConfig
from ..errors import ArgumentError, ArgumentTypeError, GraphCaptureError, LaunchError
from .plan import LaunchPlan, Packer

__all__ = ["Checked", "LaunchPlan", "Packer", "check_and_pack", "launch_checked"]

# ---------------------------------------------------------------- streams


def stream_handle(stream: Any, kernel: str) -> int:
    """The CUstream handle of a stream-like object (no CUDA call)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        handle = stream
    elif (proto := getattr(stream, "__cuda_stream__", None)) is not None:
        handle = int(proto()[1])
    else:
        for attr in ("cuda_stream", "ptr", "handle"):  # torch, cupy, cuda.core
            h = getattr(stream, attr, None)
            if h is not None:
                handle = int(h)
                break
        else:
            raise ArgumentTypeError(
                f"{kernel}: stream expects a stream (cuda.core, CuPy, PyTorch, anything with __cuda_stream__, "
                f"or an int handle), got {describe(stream)}"
            )
    if not 0 <= handle < 2**64:
        raise ArgumentTypeError(f"{kernel}: stream expects a CUstream handle (0 to 2**64-1), got {handle}")
    return handle


def default_stream(arrays: list[tuple[int, ArrayArg]], device: int) -> int:
    """The current CuPy or PyTorch stream when the arrays come from one, else the legacy default."""
    for _, arg in arrays:
        if arg.origin == "torch":
            return int(LIBRARIES.torch_stream(device))  # type: ignore[misc]  # set when a tensor was met
        if arg.origin == "cupy":
            return int(LIBRARIES.cupy_stream().ptr)  # type: ignore[misc]  # set when a CuPy array was met
    return 0


# ---------------------------------------------------------------- the general path


class Checked(Record):
    """A call bound and checked, before any CUDA call."""

    __slots__ = ()
    args: tuple[Any, ...]
    values: list[Any]  # what is packed for each parameter (an array's pointer)
    arrays: list[tuple[int, ArrayArg]]  # (parameter index, array) of each array parameter
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    stream: int | None  # None: the default for the arrays' library (see default_stream)
    kind: _kinds.LaunchKind  # the class's, or what the call's cooperative=/cluster= asked
    device: int | None  # device=: where to launch (None: where the arrays are)

    def __new__(cls, args: Any, values: Any, arrays: Any, grid: Any, block: Any, shared_mem: Any, stream: Any,
                kind: Any, device: Any) -> Any:
        return tuple.__new__(cls, (args, values, arrays, grid, block, shared_mem, stream, kind, device))


def bind(plan: LaunchPlan, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Arguments by position and by name, in parameter order."""
    names = [s.name for s in plan.specs]
    label = plan.label
    if len(args) > len(names):
        raise ArgumentError(f"{label}: takes {len(names)} arguments ({', '.join(names)}), got {len(args)} positional")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            if key == "check":
                raise ArgumentError(
                    f"{label}: check= runs a launch checked on the CPU backend, and this launch runs on a GPU; pass "
                    f"device='cpu' with it (on a GPU, run the program under compute-sanitizer)"
                )
            raise ArgumentError(
                f"{label}: unexpected argument {key!r}; the parameters are {', '.join(names)}"
                f" (launch options: grid, block, shared_mem, stream)"
            )
        if key in bound:
            raise ArgumentError(f"{label}: argument '{key}' given twice (by position and by name)")
        bound[key] = value
    if len(bound) < len(names):  # only a call that leaves some out pays for this
        for spec in plan.specs:  # an Optional array left out is None
            if spec.optional and spec.name not in bound:
                bound[spec.name] = None
        missing = [n for n in names if n not in bound]
        if missing:
            raise ArgumentError(
                f"{label}: missing argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}; the signature is {plan.signature.describe(label)}"
            )
    return tuple(bound[n] for n in names)


def check_and_pack(plan: LaunchPlan, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
                   shared_mem: Any, stream: Any, checks: tuple[Any, ...] | None = None) -> Checked | None:  # fmt: skip
    """Bind and check a call (raising on bad input, no CUDA call); None when the sizing
    array is empty, so there is nothing to launch. ``checks``: the plan's host checks, for a
    launch on the CPU."""
    kind, device = plan.kind, None
    if kwargs and not kwargs.keys().isdisjoint(CALL_OPTIONS):
        if "device" in kwargs:
            kwargs = dict(kwargs)
            device = _cuda.parse_device(kwargs.pop("device"), plan.label)  # "cuda": None, where the arrays are
        kind, kwargs = _kinds.from_call(plan.label, kind, kwargs)
    if checks is None:
        checks = plan.checks
    if kwargs or len(args) != len(checks):
        args = bind(plan, args, kwargs)
    arrays: list[tuple[int, ArrayArg]] = []  # filled by the array checks
    values = [check(a, arrays) for check, a in zip(checks, args)]
    label = plan.label
    if shared_mem.__class__ is not int or not 0 <= shared_mem <= SHARED_MEM_MAX:
        raise ArgumentError(f"{label}: shared_mem expects an int from 0 to {SHARED_MEM_MAX} (bytes), got {shared_mem!r}")
    sh = None if stream is None else stream_handle(stream, label)
    # A loop passes the same grid= and block= objects on every call, so the last ones are kept
    # with their checked dims and an identity test stands for dims(): a tuple of exact ints
    # cannot change, and holding it keeps its id from being reused. Every call takes this path
    # where the C extension is not built.
    if block is None:
        blk = plan.block
    else:
        seen = plan.seen_block
        if seen[0] is block:
            blk = seen[1]
        else:
            blk = dims(block, "block", label, BLOCK_LIMIT)
            if exact_ints(block):
                plan.seen_block = (block, blk)
    if grid is None:
        grd = plan.grid(args, arrays, blk)
        if kind.cooperative and plan.grid.source == -1 and grd is not None:
            grd = _kinds.FITS  # as many blocks as fit at once: check_loaded fills it in
    else:
        seen = plan.seen_grid
        if seen[0] is grid:
            grd = seen[1]
        else:
            grd = dims(grid, "grid", label, GRID_LIMIT)
            if exact_ints(grid):
                plan.seen_grid = (grid, grd)
    if shared_mem == 0 and plan.smem is not None:  # the class's rule, where the call passes none
        shared_mem = plan.smem(args, blk)
    if grd is None:
        return None  # every option was checked all the same
    if kind.cluster is not None:
        grd = _kinds.check_grid(label, kind, grd, grid is None)
    # tuple.__new__: a record's own __new__ is a Python function
    return tuple.__new__(Checked, (args, values, arrays, grd, blk, shared_mem, sh, kind, device))


def launch_checked(plan: LaunchPlan, c: Checked) -> None:
    """Launch a checked call: on the device its arrays are on (or ``device=``), staging host
    NumPy arrays (copy in, launch, copy back, wait).

    The common case (every array on this thread's device, whose context is current) is spelled
    out here: where the C extension is not built, every launch runs this."""
    tls = _state.tls
    if _state.captures_open and tls.capture is not None:  # inside cf.graph(): see capture.py
        return tls.capture.launch(plan, c)  # type: ignore[no-any-return]
    _, values, arrays, grid, block, shared_mem, stream, kind, device = c  # the fields at once: read on every launch
    info = tls.device or _cuda.current_device()
    did = info.id
    if device is not None and device != did:
        return launch_elsewhere(plan, c)
    for _, arg in arrays:
        if arg.device != did:  # host arrays to stage, memory elsewhere or of unknown device
            return launch_elsewhere(plan, c)
    if _state.multi_gpu and _cuda.current_context() != _state.contexts.get(did):  # CuPy's `with Device(n)`
        return launch_elsewhere(plan, c)
    loaded = plan.loaded.get(did) or plan.load(info)
    handle, _, max_threads, max_shared = loaded[:4]
    if kind is not _kinds.PLAIN or plan.grid_sync or shared_mem > max_shared or block[0] * block[1] * block[2] > max_threads:
        grid = check_loaded(plan, loaded, c).grid
    if stream is None:
        stream = default_stream(arrays, did)
    label = plan.label
    _cuda.note_launch(label, grid, block, shared_mem)  # named if a later CUDA call reports a fault
    last = plan.config  # a loop's launches share one configuration: compared, not made again
    if last[0] == grid and last[1] == block and last[2] == shared_mem and last[3] is kind:
        config = last[4]
    else:
        config = LaunchConfig.of(grid, block, shared_mem, kind)
        plan.config = (grid, block, shared_mem, kind, config)  # one object: threads read it whole
    err = _state.launch(handle, config, stream, plan.packer.pack(values))
    if err:  # a CUresult: CUDA_SUCCESS is 0
        raise_launch_error(err, grid, block, shared_mem, label)
    return None


def launch_elsewhere(plan: LaunchPlan, c: Checked) -> None:
    """A launch on another device than the thread's (its context made current for the
    launch, then the thread's restored), or with host arrays to stage."""
    with _cuda.on_device(target_device(plan, c)) as info:
        c, handle, stream, staged = place(plan, c, info)
        if staged:
            stage_and_launch(plan, c, handle, stream)
        else:
            _cuda.note_launch(plan.label, c.grid, c.block, c.shared_mem)
            launch_raw(handle, config_of(c), stream, plan.packer.pack(c.values), plan.label)


def target_device(plan: LaunchPlan, c: Checked) -> int:
    """Where a call launches: ``device=``, else the one device its arrays are on, else the
    thread's device (``cf.set_device``). Arrays on several devices are refused."""
    where: dict[int, list[str]] = {}
    for i, arg in c.arrays:
        d = arg.device
        if d == UNKNOWN_DEVICE:  # __cuda_array_interface__: ask CUDA
            found = _cuda.pointer_device(arg.ptr) if arg.ptr else None
            if found is None and arg.ptr:
                raise ArgumentTypeError(
                    f"{plan.label}: argument '{plan.specs[i].name}' expects device memory, but CUDA does not know "
                    f"pointer {arg.ptr:#x} ({arg.origin}); pass memory allocated by CUDA"
                )
            d = HOST if found is None else found  # a null pointer (an empty array) is on no device
        if d != HOST:
            where.setdefault(d, []).append(repr(plan.specs[i].name))
    if len(where) > 1 or (c.device is not None and where and c.device not in where):
        on = "; ".join(f"{', '.join(names)} on device {d}" for d, names in sorted(where.items()))
        asked = f"device={c.device} was asked, but " if c.device is not None else ""
        raise ArgumentTypeError(
            f"{plan.label}: {asked}the arrays are on different devices ({on}); a launch runs on one device: "
            f"copy them to one device first"
        )
    if c.device is not None:
        return c.device
    if where:
        return next(iter(where))
    return _cuda.current_device().id


def place(plan: LaunchPlan, c: Checked, info: Any) -> tuple[Checked, int, int, bool]:
    """The CUDA part of a launch on ``info``'s device (its context current) before the call:
    (the call with its grid filled in, function handle, stream, whether host NumPy arrays must
    be staged); raises if the launch asks what the loaded kernel cannot do (see ``_runtime/limits.py``)."""
    loaded = plan.loaded.get(info.id) or plan.load(info)
    c = check_loaded(plan, loaded, c)
    staged = any(arg.device == HOST for _, arg in c.arrays)
    stream = c.stream if c.stream is not None else default_stream(c.arrays, info.id)
    return c, loaded[0], stream, staged


def check_loaded(plan: LaunchPlan, loaded: _limits.Loaded, c: Checked) -> Checked:
    """What only the loaded kernel tells: a grid sync launched without the cooperative flag
    (a sticky fault otherwise), its block and shared-memory limits, the kind's own checks.
    Returns the call with a cooperative default grid (``_kinds.FITS``) filled in: as many
    blocks as fit at once."""
    if plan.grid_sync and not c.kind.cooperative:
        raise ArgumentError(
            f"{plan.label}: the kernel's source syncs the whole grid (a grid group's sync()), which "
            f"needs a cooperative launch; set cooperative = True on the class or pass cooperative=True"
        )
    if c.grid is _kinds.FITS:
        c = c._replace(grid=_limits.fitting_grid(loaded, c.kind, c.block, c.shared_mem))
    _limits.check_on_device(plan.label, loaded, c.kind, c.grid, c.block, c.shared_mem)
    return c


def config_of(c: Checked) -> LaunchConfig:
    """The launch configuration of a checked call."""
    return LaunchConfig.of(c.grid, c.block, c.shared_mem, c.kind)


def stage_and_launch(plan: LaunchPlan, c: Checked, handle: int, stream: int) -> None:
    driver = _cuda.bindings()
    if capturing(stream):  # torch.cuda.graph, CuPy's begin_capture: the copies and the wait would end it
        names = ", ".join(repr(plan.specs[i].name) for i, arg in c.arrays if arg.device == HOST)
        raise GraphCaptureError(
            f"{plan.label}: argument(s) {names} are host NumPy arrays, which a launch copies in and out and waits "
            f"for, but a CUDA graph is being captured (stream {stream:#x}), which cannot hold that; pass device arrays"
        )
    values = list(c.values)
    staged: list[tuple[int, int, int]] = []
    try:
        for i, arg in c.arrays:
            if arg.device != HOST:
                continue
            nbytes = c.args[i].nbytes
            ptr = _cuda.check(driver.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc")
            staged.append((i, int(ptr), nbytes))
            if nbytes:
                _cuda.check(driver.cuMemcpyHtoDAsync(ptr, arg.ptr, nbytes, stream), "cuMemcpyHtoDAsync")
            values[i] = int(ptr)
        _cuda.note_launch(plan.label, c.grid, c.block, c.shared_mem)
        launch_raw(handle, config_of(c), stream, plan.packer.pack(values), plan.label)
        for i, ptr, nbytes in staged:
            if plan.specs[i].writes and nbytes:
                _cuda.check(driver.cuMemcpyDtoHAsync(c.args[i].ctypes.data, ptr, nbytes, stream), "cuMemcpyDtoHAsync")
        _cuda.check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
    finally:
        for _, ptr, _ in staged:
            driver.cuMemFree(ptr)


def launch_raw(handle: int, config: LaunchConfig, stream: int, params_addr: int, kernel: str) -> None:
    err = _state.launch(handle, config, stream, params_addr)
    if err:  # a CUresult: CUDA_SUCCESS is 0
        raise_launch_error(err, config.grid, config.block, config.shared_mem, kernel)


def capturing(stream: int) -> bool:
    """Whether ``stream`` is capturing a CUDA graph (or CUDA cannot say, which it does for the
    legacy default stream while another stream captures)."""
    err, status = _cuda.bindings().cuStreamIsCapturing(stream)
    return int(err) != 0 or int(status) != 0


CAPTURE_ERRORS = range(900, 909)  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ... _WRONG_THREAD


def raise_launch_error(err: Any, grid: Any, block: Any, shared_mem: int, kernel: str) -> None:
    if int(err) in _cuda.STICKY:  # an earlier kernel faulted: never blame this one
        raise _cuda.fault(err, f"the launch of {kernel}", current=kernel)
    if int(err) in CAPTURE_ERRORS:
        raise GraphCaptureError(
            f"{kernel}: the launch (grid={grid}, block={block}) conflicts with a CUDA graph capture under way: "
            f"{_cuda.error_text(err)}; while a stream captures (cf.graph, torch.cuda.graph, CuPy's begin_capture), "
            f"launch on that stream: pass stream=, or use arrays whose library's current stream it is"
        )
    raise LaunchError(
        f"{kernel}: the launch (grid={grid}, block={block}, shared_mem={shared_mem}) failed: {_cuda.error_text(err)}"
    )
