"""`OnDevice`: what a kernel does on a device besides a call: its attributes and occupancy
there, prepared launches, and its module variables (``__constant__``/``__device__``).

A mixin of `Kernel` (``kernel.py``), kept apart from the declaring and compiling side; each
method reads the kernel's `LaunchPlan` and loads the kernel on the device first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .._launch.plan import LaunchPlan
from .._runtime import cuda as _cuda
from .._runtime import limits as _limits
from ..errors import NoDeviceError

if TYPE_CHECKING:
    from .._launch.prepared import PreparedLaunch

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _names_the_kernel(method: _Method) -> _Method:
    """``method`` of a Kernel, whose NoDeviceError (no GPU) names the kernel and its own
    compile call, as a launch's does (``_cuda.no_device_for``); for the GPU-only methods
    (all but the module variables', which the CPU backend serves) it says so."""
    gpu_only = "" if method.__name__ in ("set_global", "get_global") else f"{method.__name__}()"

    @functools.wraps(method)
    def named(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except NoDeviceError as exc:
            raise _cuda.no_device_for(self.label, exc, gpu_only=gpu_only) from None

    return named  # type: ignore[return-value]


class OnDevice:
    """`Kernel`'s methods that load it on a device and act there (see the module docstring)."""

    __slots__ = ()
    label: str  # set by Kernel
    _plan: LaunchPlan

    @property
    @_names_the_kernel
    def attributes(self) -> _limits.KernelAttributes:
        """Registers, local memory, static shared memory, the most threads per block and the
        most dynamic shared memory a launch may ask, on the current device (loads the kernel).

        Returns
        -------
        KernelAttributes

        Raises
        ------
        NoDeviceError
            Where there is no GPU (``compile(...).resources()`` reads a cubin without one).
        """
        from .._launch import resources as _resources  # (asked for rarely: start-up)

        return _resources.attributes(self._plan)

    @_names_the_kernel
    def occupancy(self, block: Any = None, shared_mem: int = 0) -> int:
        """Active blocks per SM, on the current device (loads the kernel).

        Parameters
        ----------
        block : int or tuple of ints, optional
            Default: the class's block.
        shared_mem : int
            Dynamic shared memory per block, in bytes.

        Returns
        -------
        int
            Blocks of this kernel one SM runs at once; times the SM count, the most a
            cooperative launch may ask.

        Raises
        ------
        ArgumentError
            For a block or shared memory that is not valid.

        Examples
        --------
        >>> Saxpy.occupancy(block=256) >= 1  # doctest: +GPU
        True
        """
        from .._launch import resources as _resources

        return _resources.occupancy(self._plan, block, shared_mem)

    @_names_the_kernel
    def prepare(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                stream: Any = None, **kwargs: Any) -> PreparedLaunch:  # fmt: skip
        """Check and pack a launch once; calling the result launches it again with no per-call
        work but the driver call (the fastest path, for loops that repeat one launch).

        The arrays are the same memory on every launch (their contents may change); the
        scalars, grid, block and stream are fixed: prepare again to change them. Host NumPy
        arrays are not accepted (they would need copies on every launch).

        Parameters
        ----------
        *args, **kwargs
            The kernel's arguments, as for a call.
        grid, block, shared_mem, stream
            As for a call.

        Returns
        -------
        PreparedLaunch

        Raises
        ------
        ArgumentError, ArgumentTypeError
            As a call would, and for host NumPy arrays or empty arrays.

        Examples
        --------
        >>> x, y = cf.to_device(np.ones(4, np.float32)), cf.to_device(np.full(4, 2.0, np.float32))  # doctest: +GPU
        >>> step = Saxpy.prepare(2.0, x, y, 4)  # doctest: +GPU
        >>> for _ in range(3):  # doctest: +GPU
        ...     step()
        >>> y.to_numpy()  # doctest: +GPU
        array([8., 8., 8., 8.], dtype=float32)
        """
        from .._launch import prepared as _prepared  # (imported by the first prepare: start-up)

        return _prepared.prepare(self._plan, args, kwargs, grid, block, shared_mem, stream)

    @_names_the_kernel
    def set_global(self, name: str, value: Any, *, stream: Any = None, device: int | str | None = None) -> None:
        """Write host data into a module variable (``__constant__`` or ``__device__``, at
        namespace scope). Loads the kernel on the device first.

        Parameters
        ----------
        name : str
            The variable, as the preamble or source declares it.
        value : array-like
            Host data whose size in bytes is the variable's.
        stream : stream-like, optional
            The copy's stream (default: the legacy default stream).
        device : int or str, optional
            Default: the thread's device (``"cpu"``: the kernel's CPU build, see ``cf.set_device``;
            ``"cuda"``, ``"cuda:N"`` or an ordinal: a GPU).

        Raises
        ------
        ArgumentError
            For a name the module does not have.
        ArgumentTypeError
            For a size that is not the variable's (both are given).

        Examples
        --------
        >>> @cf.kernel
        ... class Scaled:
        ...     x: cf.Array[cf.float32]
        ...     preamble = "__constant__ float factor;"
        ...     body = "x[threadIdx.x] *= factor;"
        >>> Scaled.set_global("factor", np.array([3.0], np.float32))  # doctest: +LAUNCH
        """
        from .._launch import globals as _globals  # (off the launch path: imported on first use)

        _globals.set_global(self._plan, name, value, stream=stream, device=device)

    @_names_the_kernel
    def get_global(self, name: str, dtype: Any = "uint8", *, device: int | str | None = None) -> Any:
        """Read a module variable back, after the device's work so far.

        Parameters
        ----------
        name : str
            The variable.
        dtype : dtype-like
            How to view its bytes (default: ``uint8``).
        device : int or str, optional
            Default: the thread's device (``"cpu"``: the kernel's CPU build; ``"cuda"``,
            ``"cuda:N"`` or an ordinal: a GPU).

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        ArgumentError
            For a name the module does not have.

        Examples
        --------
        >>> Scaled.get_global("factor", np.float32)  # doctest: +LAUNCH
        array([3.], dtype=float32)
        """
        from .._launch import globals as _globals

        return _globals.get_global(self._plan, name, dtype, device=device)
