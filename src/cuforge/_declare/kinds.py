"""Launch kinds: plain, cooperative, or in thread-block clusters.

A launch's kind comes from the class (``cooperative = True``, ``cluster = (2, 1, 1)``,
``non_portable_cluster = True``) or from the call (the same names as keywords), and reaches
the driver as cuLaunchKernelEx's launch attributes (made in the runtime layer). Its checks
come in two steps, both before any launch:

- `check_grid` needs no GPU (the general launch path calls it): the cluster's shape,
  the grid's divisibility by it;
- ``_runtime.limits.check_on_device`` needs the loaded function: cooperative occupancy,
  the device's cluster support, the shared-memory limit.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .._frozen import Record
from ..errors import ArgumentError, DeclarationError

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
# (strings: re compiles them on first use)
_GRID_NAME = (
    rf"\bgrid_group\s*(?:const\b\s*)?[&*]{{0,2}}\s*(\w+)"
    rf"|\bauto\s*(?:const\b\s*)?&{{0,2}}\s*(\w+)\s*[=({{]\s*{_THIS_GRID}"
)
_COMMENT = r"//[^\n]*|/\*.*?\*/"


class LaunchKind(Record):
    """How a launch runs: plainly, cooperatively, or in clusters of blocks (made by `kind_of`)."""

    __slots__ = ()
    cooperative: bool
    cluster: tuple[int, int, int] | None
    non_portable_cluster: bool

    def __new__(cls, cooperative: Any = False, cluster: Any = None, non_portable_cluster: Any = False) -> Any:
        return tuple.__new__(cls, (cooperative, cluster, non_portable_cluster))

    @property
    def plain(self) -> bool:
        return not self.cooperative and self.cluster is None


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
    if "this_grid" not in source and "grid_group" not in source:  # (skipping comments cannot add either)
        return False
    code = re.sub(_COMMENT, " ", source, flags=re.S)
    if "this_grid" not in code and "grid_group" not in code:
        return False
    names = {a or b for a, b in re.findall(_GRID_NAME, code)}
    group = "|".join([_THIS_GRID, *(rf"\b{re.escape(n)}\b" for n in sorted(names))])
    return re.search(rf"(?:{group})\s*\.\s*sync\s*\(|\bsync\s*\(\s*(?:{group})\s*\)", code) is not None
