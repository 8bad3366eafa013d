"""Launch kinds and the limits of a loaded kernel: cooperative launches, thread-block
clusters, dynamic shared memory past 48 KiB, a kernel's attributes and occupancy.

A launch's kind comes from the class (``cooperative = True``, ``cluster = (2, 1, 1)``,
``non_portable_cluster = True``) or from the call (the same names as keywords), and reaches
the driver as cuLaunchKernelEx's launch attributes (``_cuda.launch_attributes``). Its checks
come in two steps, both before any launch:

- `check_grid` needs no GPU (``_launch.check_and_pack`` calls it): the cluster's shape,
  the grid's divisibility by it;
- `check_on_device` needs the loaded function (``_launch.launch_checked`` calls it when
  the call has a kind, or its block or shared memory pass what the function allows):
  cooperative occupancy, the device's cluster support, the shared-memory limit.

`load_limits` runs once per kernel and device, when the kernel is loaded: it sets the
shared-memory opt-in (so a launch may ask for up to the device's per-block maximum) and
records what the C launcher compares each call against.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from typing import Any, NamedTuple

from . import _cuda
from .errors import ArgumentError, DeclarationError

KIND_OPTIONS = ("cooperative", "cluster", "non_portable_cluster")
PORTABLE_CLUSTER = 8  # blocks per cluster every sm_90+ GPU runs; more needs non_portable_cluster
DEFAULT_SHARED = 48 * 1024  # static + dynamic shared memory per block without the opt-in
# The grid of a cooperative launch that neither the call nor the class gives: as many blocks as
# fit on the device at once, which only the loaded kernel tells (see fitting_grid).
FITS = (0, 0, 0)
# A grid sync, spelt this_grid().sync() or sync(this_grid()), or through a name bound to a grid
# group (`grid_group g`, a parameter `const grid_group& g`, `auto g = this_grid()`, and `auto`
# initialised directly: `auto g(this_grid())`, `auto&& g{this_grid()}`): g.sync(), sync(g).
_THIS_GRID = r"(?:\w+\s*::\s*)*this_grid\s*\(\s*\)"
_GRID_NAME = re.compile(
    rf"\bgrid_group\s*(?:const\b\s*)?[&*]{{0,2}}\s*(\w+)"
    rf"|\bauto\s*(?:const\b\s*)?&{{0,2}}\s*(\w+)\s*[=({{]\s*{_THIS_GRID}"
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class LaunchKind(NamedTuple):
    """How a launch runs: plainly, cooperatively, or in clusters of blocks (made by `kind_of`)."""

    cooperative: bool = False
    cluster: tuple[int, int, int] | None = None
    non_portable_cluster: bool = False

    @property
    def attrs(self) -> bytes | None:
        """The launch-attribute list cuLaunchKernelEx gets for this kind (made once per kind)."""
        return _attributes(self.cooperative, self.cluster)

    @property
    def plain(self) -> bool:
        return not self.cooperative and self.cluster is None


@functools.cache
def _attributes(cooperative: bool, cluster: tuple[int, int, int] | None) -> bytes | None:
    return _cuda.launch_attributes(cooperative=cooperative, cluster=cluster)


PLAIN = LaunchKind()


def kind_of(label: str, cooperative: Any, cluster: Any, non_portable: Any, *, where: str) -> LaunchKind:
    """A checked LaunchKind; ``where`` is "class" (DeclarationError) or "call" (ArgumentError)."""
    error = DeclarationError if where == "class" else ArgumentError
    for name, value in (("cooperative", cooperative), ("non_portable_cluster", non_portable)):
        if not isinstance(value, bool):
            raise error(f"{label}: {name} expects True or False, got {value!r}")
    dims = None
    if cluster is not None:
        raw = (cluster,) if isinstance(cluster, int) else cluster
        ok = isinstance(raw, (tuple, list)) and 1 <= len(raw) <= 3
        ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in raw)
        if not ok:
            raise error(f"{label}: cluster expects an int or a tuple of 1 to 3 positive ints (blocks), got {cluster!r}")
        dims = (*tuple(raw), 1, 1)[:3]
        size = math.prod(dims)
        if size > PORTABLE_CLUSTER and not non_portable:
            raise error(
                f"{label}: cluster={dims} has {size} blocks; clusters larger than {PORTABLE_CLUSTER} blocks are not "
                f"portable: pass non_portable_cluster=True (Hopper runs up to 16) or use a smaller cluster"
            )
    if not cooperative and dims is None and not non_portable:
        return PLAIN
    return LaunchKind(cooperative, dims, non_portable)


def from_call(label: str, base: LaunchKind, kwargs: dict[str, Any]) -> tuple[LaunchKind, dict[str, Any]]:
    """The kind a call asks for (its keywords over the class's), and the other keywords."""
    rest = {k: v for k, v in kwargs.items() if k not in KIND_OPTIONS}
    cooperative = kwargs.get("cooperative", base.cooperative)
    cluster = kwargs.get("cluster", base.cluster)
    non_portable = kwargs.get("non_portable_cluster", base.non_portable_cluster)
    return kind_of(label, cooperative, cluster, non_portable, where="call"), rest


def check_grid(label: str, kind: LaunchKind, grid: tuple[int, int, int], defaulted: bool) -> tuple[int, int, int]:
    """The grid of a clustered launch: a default grid is rounded up to whole clusters; an
    explicit one must be divisible (grid counts blocks, as in CUDA C++)."""
    cluster = kind.cluster
    if cluster is None or all(g % c == 0 for g, c in zip(grid, cluster)):
        return grid
    if defaulted and grid[1] % cluster[1] == 0 and grid[2] % cluster[2] == 0:
        return (-(-grid[0] // cluster[0]) * cluster[0], grid[1], grid[2])
    fixed = tuple(-(-g // c) * c for g, c in zip(grid, cluster))
    raise ArgumentError(
        f"{label}: grid={grid} is not divisible by cluster={cluster}; grid counts blocks, so each of its "
        f"dimensions must be a multiple of the cluster's (for example grid={fixed})"
    )


def uses_grid_sync(source: str) -> bool:
    """Whether the source syncs the whole grid, which needs a cooperative launch: ``g.sync()``
    or ``cg::sync(g)`` on a grid group ``g`` (``this_grid()`` or a name bound to one).

    Using the grid group without syncing it (``this_grid().thread_rank()``, as the CUDA
    Programming Guide's cluster histogram does) needs no cooperative launch. The rule reads the
    source because the compiled code does not tell: a cubin marks cooperative-group
    instructions (EIATTR_COOP_GROUP_INSTR_OFFSETS) for cluster syncs and warp reductions alike.
    Comments are skipped.
    """
    code = _COMMENT.sub(" ", source)
    if "this_grid" not in code and "grid_group" not in code:
        return False
    names = {a or b for a, b in _GRID_NAME.findall(code)}
    group = "|".join([_THIS_GRID, *(rf"\b{re.escape(n)}\b" for n in sorted(names))])
    return re.search(rf"(?:{group})\s*\.\s*sync\s*\(|\bsync\s*\(\s*(?:{group})\s*\)", code) is not None


# ---------------------------------------------------------------- a loaded kernel's limits


class Loaded(NamedTuple):
    """A kernel loaded on one device: what ``Kernel._by_device`` holds. The C launcher reads
    ``handle``, ``max_threads`` and ``max_shared`` by position (0, 2, 3)."""

    handle: int  # the CUkernel address the launch takes
    compiled: Any  # the CompiledKernel, or the prebuilt Module it came from
    max_threads: int  # threads per block the compiled code allows
    max_shared: int  # dynamic shared memory per block, after the opt-in
    static_shared: int
    device: Any  # _cuda.DeviceInfo


def load_limits(handle: int, device: Any) -> tuple[int, int, int]:
    """(max threads per block, max dynamic shared memory, static shared memory) of a kernel
    (its CUkernel ``handle``) on ``device``, after setting its opt-in to the device's
    per-block maximum (once per kernel and device, at load: the attribute is a permission,
    not a reservation)."""
    static = _cuda.kernel_attribute(handle, "SHARED_SIZE_BYTES", device.id)
    max_dynamic = max(device.shared_optin - static, 0)
    if max_dynamic > DEFAULT_SHARED - static:
        err = _cuda.set_kernel_attribute(handle, "MAX_DYNAMIC_SHARED_SIZE_BYTES", max_dynamic, device.id)
        if err != 0:  # a driver that refuses: keep the default limit
            max_dynamic = max(DEFAULT_SHARED - static, 0)
    return _cuda.kernel_attribute(handle, "MAX_THREADS_PER_BLOCK", device.id), max_dynamic, static


_occupancy: dict[tuple[int, int, int], int] = {}
_non_portable: set[tuple[int, int]] = set()
_lock = threading.Lock()


def blocks_per_sm(loaded: Loaded, threads: int, shared_mem: int) -> int:
    """Active blocks per SM for this block size and dynamic shared memory (remembered)."""
    key = (loaded.handle, threads, shared_mem)
    found = _occupancy.get(key)
    if found is None:
        drv = _cuda._driver()  # the kernel's function in the current context (the device's)
        function = _cuda.check(drv.cuKernelGetFunction(drv.CUkernel(loaded.handle)), "cuKernelGetFunction")
        found = _occupancy[key] = int(_cuda.check(
            drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, shared_mem),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor"))  # fmt: skip
    return found


def fitting_grid(loaded: Loaded, kind: LaunchKind, block: tuple[int, int, int], shared_mem: int) -> tuple[int, int, int]:
    """The most blocks that run at once (occupancy x SMs) for this block and dynamic shared
    memory: the default grid of a cooperative launch, whole clusters where it is clustered."""
    blocks = blocks_per_sm(loaded, block[0] * block[1] * block[2], shared_mem) * loaded.device.sm_count
    if kind.cluster is not None:
        blocks -= blocks % kind.cluster[0]
    return (max(blocks, 1), 1, 1)


def check_on_device(label: str, loaded: Loaded, kind: LaunchKind, grid: tuple[int, int, int],
                    block: tuple[int, int, int], shared_mem: int) -> None:  # fmt: skip
    """The checks that need the loaded kernel: raise ArgumentError before the launch."""
    threads = block[0] * block[1] * block[2]
    device = loaded.device
    if threads > loaded.max_threads:
        raise ArgumentError(
            f"{label}: block={block} has {threads} threads, but the compiled kernel allows at most "
            f"{loaded.max_threads} per block on device {device.id} (its register use or __launch_bounds__); "
            f"use a smaller block"
        )
    if shared_mem > loaded.max_shared:
        raise ArgumentError(
            f"{label}: shared_mem={shared_mem} bytes is more than the {loaded.max_shared} bytes of dynamic shared "
            f"memory a block can have on device {device.id} ({device.name}: {device.shared_optin} per block, less "
            f"{loaded.static_shared} of static shared memory); ask for less"
        )
    if kind.cooperative:
        per_sm = blocks_per_sm(loaded, threads, shared_mem)
        limit = per_sm * device.sm_count
        blocks = grid[0] * grid[1] * grid[2]
        if blocks > limit:
            raise ArgumentError(
                f"{label}: a cooperative launch must fit on the GPU at once: at most {limit} blocks ({per_sm} per SM x "
                f"{device.sm_count} SMs) for block={block} and shared_mem={shared_mem}, got grid={grid} ({blocks} "
                f"blocks); use a smaller grid (a grid-stride loop covers the rest)"
            )
    if kind.cluster is not None:
        if device.cc < 90:
            raise ArgumentError(
                f"{label}: thread-block clusters need compute capability 9.0 or newer; device {device.id} "
                f"({device.name}) is {device.cc // 10}.{device.cc % 10}; launch without cluster="
            )
        if kind.non_portable_cluster and (loaded.handle, device.id) not in _non_portable:
            with _lock:
                err = _cuda.set_kernel_attribute(loaded.handle, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1, device.id)
                _cuda.check((err,), "cuKernelSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)")
                _non_portable.add((loaded.handle, device.id))


class KernelAttributes(NamedTuple):
    """What a kernel's compiled code needs and allows on one device (``Kernel.attributes``).

    Examples
    --------
    >>> @cf.kernel
    ... class Probe:
    ...     x: cf.Array[cf.float32]
    ...     body = "__shared__ float s[32]; s[threadIdx.x] = x[threadIdx.x]; x[threadIdx.x] = s[31 - threadIdx.x];"
    >>> attrs = Probe.attributes  # doctest: +GPU
    >>> attrs.static_shared_bytes, attrs.max_threads_per_block  # doctest: +GPU
    (128, 1024)
    """

    registers: int  # per thread
    local_bytes: int  # local memory per thread (spills, stack arrays)
    static_shared_bytes: int
    max_threads_per_block: int
    max_dynamic_shared_bytes: int  # after cuforge's opt-in: the most shared_mem= a launch may ask
    device: int


KernelAttributes.__module__ = "cuforge"  # (a NamedTuple's body cannot set it)
