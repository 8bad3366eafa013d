"""The cuforge error tree.

Every error cuforge raises on purpose derives from [`CuforgeError`][cuforge.errors.CuforgeError]. Where an
error refines a builtin, it inherits that too, so ``except TypeError`` keeps working:

    CuforgeError (Exception)
    ├── DeclarationError (TypeError)     a kernel class is malformed; raised at definition
    ├── TemplateError                    Jinja could not render a body or template
    ├── CompileError                     NVRTC rejected the rendered source (.log, .source, .options)
    │   └── CellCompileError             ... in a %%cuda cell (shown without a traceback)
    ├── CompilerNotFoundError (RuntimeError)  no host C++ compiler for the CPU backend
    ├── ArgumentError (ValueError)       a launch argument is missing, extra or out of range
    │   └── ArgumentTypeError (TypeError)   a launch argument has the wrong type or dtype
    ├── SignatureMismatchError           a ``source=`` kernel disagrees with its annotations
    ├── NoDeviceError (RuntimeError)     no usable CUDA device or driver
    ├── LaunchError (RuntimeError)       the driver refused a launch or a CUDA call failed
    │   ├── DeviceFaultError             a kernel faulted: the device's context is lost for good
    │   ├── LaunchTimeoutError           a CPU launch ran past its time limit and was stopped
    │   └── KernelCheckError             a checked launch on the CPU (check=True) found a bug in the kernel
    │       ├── OutOfBoundsError (IndexError)  an access outside an array, shared or module variable
    │       ├── MisalignedAccessError    a vector load or store at an address not aligned to its size
    │       ├── UninitializedReadError   a read of shared memory or of an Out[...] argument never written
    │       ├── RaceError                two threads' accesses, one a write, with nothing ordering them
    │       ├── WarpMisuseError          a warp function's mask and the lanes that call it disagree
    │       └── BarrierMisuseError       a __syncthreads or grid.sync() that some threads or blocks skip
    ├── GraphCaptureError (RuntimeError) a launch a CUDA graph cannot hold, or a capture that failed
    │   └── GraphUpdateError             a re-capture differs from the graph it would update
    ├── ConfigError (ValueError)         a CUFORGE_* setting has a value cuforge cannot use
    └── ParseError (ValueError)          a %%cuda cell's __global__ signature cannot be read
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "BarrierMisuseError",
    "CellCompileError",
    "CompileError",
    "CompilerNotFoundError",
    "ConfigError",
    "CuforgeError",
    "DeclarationError",
    "DeviceFaultError",
    "GraphCaptureError",
    "GraphUpdateError",
    "KernelCheckError",
    "LaunchError",
    "MisalignedAccessError",
    "LaunchTimeoutError",
    "NoDeviceError",
    "OutOfBoundsError",
    "ParseError",
    "RaceError",
    "SignatureMismatchError",
    "TemplateError",
    "UninitializedReadError",
    "WarpMisuseError",
]


class CuforgeError(Exception):
    """Root of every error cuforge raises on purpose.

    IPython shows one as the caller's own frames and the message (through its traceback hook):
    the message says what went wrong and the fix, and cuforge's frames would only bury the
    line that caused it. The full traceback stays on ``__traceback__``: ``%debug`` walks it,
    ``traceback.print_exception(exc)`` prints it.
    """

    __module__ = "cuforge"

    def _render_traceback_(self) -> list[str]:
        import traceback

        hidden = _hidden_dirs()
        frames = [f for f in traceback.extract_tb(self.__traceback__) if not f.filename.startswith(hidden)]
        lines = ["Traceback (most recent call last):", *"".join(traceback.format_list(frames)).splitlines()]
        return [*(lines if frames else []), f"{type(self).__module__}.{type(self).__qualname__}: {self}"]


def _hidden_dirs() -> tuple[str, ...]:
    """The folders whose frames IPython's rendering leaves out: cuforge's own and IPython's
    (whose ``run_code`` frame tops every cell's traceback)."""
    import os
    import sys

    modules = [sys.modules[__package__ or "cuforge"], sys.modules.get("IPython")]
    return tuple(os.path.dirname(m.__file__) + os.sep for m in modules if m is not None and m.__file__)


class DeclarationError(CuforgeError, TypeError):
    """A kernel class is malformed (raised when the class is defined)."""

    __module__ = "cuforge"


class TemplateError(CuforgeError):
    """A Jinja body or template failed to render."""

    __module__ = "cuforge"


class CompileError(CuforgeError):
    """NVRTC rejected a kernel's rendered source.

    Attributes
    ----------
    log : str
        NVRTC's full program log.
    source : str
        The rendered CUDA C++ that was compiled.
    options : tuple of str
        The NVRTC flags used.
    """

    __module__ = "cuforge"

    def __init__(self, message: str, *, log: str, source: str, options: tuple[str, ...]):
        super().__init__(message)
        self.log = log
        self.source = source
        self.options = options

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields: rebuilt through _rebuild (worker processes send errors back).
        return _rebuild, (type(self), str(self), self.log, self.source, self.options)


def _rebuild(cls: type[CompileError], message: str, log: str, source: str, options: tuple[str, ...]) -> CompileError:
    return cls(message, log=log, source=source, options=options)


class CompilerNotFoundError(CuforgeError, RuntimeError):
    """No host C++ compiler to build kernels for the CPU with (``CXX``, ``c++``, ``g++``,
    ``clang++`` or the ``ziglang`` wheel); the message says how to get one."""

    __module__ = "cuforge"


class ArgumentError(CuforgeError, ValueError):
    """A launch argument is missing, unexpected, or out of range for its type."""

    __module__ = "cuforge"


class ArgumentTypeError(ArgumentError, TypeError):
    """A launch argument has the wrong type, dtype, rank, layout or device."""

    __module__ = "cuforge"


class SignatureMismatchError(CuforgeError):
    """A ``source=`` kernel's compiled parameters disagree with its annotations."""

    __module__ = "cuforge"


class NoDeviceError(CuforgeError, RuntimeError):
    """No usable CUDA device or driver is present."""

    __module__ = "cuforge"


class LaunchError(CuforgeError, RuntimeError):
    """A CUDA driver call made for a launch failed."""

    __module__ = "cuforge"


class DeviceFaultError(LaunchError):
    """A kernel faulted on the GPU (an illegal address, a device-side assert, ...): the CUDA
    context of the device is lost, no further GPU work can run in the process, and every later
    cuforge call says so. The first one names the kernels that may have caused it."""

    __module__ = "cuforge"


class LaunchTimeoutError(LaunchError):
    """A launch on the CPU ran longer than its time limit (``CUFORGE_CPU_TIMEOUT``; the pytest
    plugin's ``--cuforge-cpu-timeout``) and was stopped; the process, and later launches, go on."""

    __module__ = "cuforge"


class KernelCheckError(LaunchError):
    """A checked launch on the CPU backend (``check=True`` at a call, ``CUFORGE_CHECK=1``)
    found a bug in the kernel. The message names the kernel, the kind of bug, the block and
    thread, the array parameter or shared variable with the index and its extent, and the line.
    The first bug found ends the launch; the process goes on."""

    __module__ = "cuforge"


class OutOfBoundsError(KernelCheckError, IndexError):
    """An access outside an array argument, a ``__shared__`` variable, dynamic shared memory or a
    module variable (refused before it happened: nothing outside the arrays was touched)."""

    __module__ = "cuforge"


class MisalignedAccessError(KernelCheckError):
    """A load or store of a vector type at an address not aligned to its size."""

    __module__ = "cuforge"


class UninitializedReadError(KernelCheckError):
    """A read of shared memory that no thread of the block wrote, or of an ``Out[...]``
    argument the kernel had not written."""

    __module__ = "cuforge"


class RaceError(KernelCheckError):
    """Two threads' accesses to one element, at least one a write and not both atomic, with no
    barrier (``__syncthreads``, ``__syncwarp``, ``grid.sync()``) between them; reported whether
    or not the result came out right."""

    __module__ = "cuforge"


class WarpMisuseError(KernelCheckError):
    """A warp function (``__shfl_sync``, ``__syncwarp``, ...) whose mask leaves out a lane that
    calls it or names a lane that never reaches it."""

    __module__ = "cuforge"


class BarrierMisuseError(KernelCheckError):
    """A ``__syncthreads()`` that some threads of the block skip, or a ``grid.sync()`` that some
    blocks skip."""

    __module__ = "cuforge"


class GraphCaptureError(CuforgeError, RuntimeError):
    """A launch inside ``cf.graph()`` that a CUDA graph cannot hold (host arrays to stage, a
    first compile, autotuning, another stream or device), or a capture that CUDA ended with an
    error. The capture is over when it is raised; the device stays usable."""

    __module__ = "cuforge"


class GraphUpdateError(GraphCaptureError):
    """``Graph.update()`` captured launches that differ in number, kernel or kind from the
    graph's; the graph is left as it was."""

    __module__ = "cuforge"


class ConfigError(CuforgeError, ValueError):
    """A CUFORGE_* setting has a value cuforge cannot use."""

    __module__ = "cuforge"


class CellCompileError(CompileError):
    """A ``%%cuda`` cell failed to compile; IPython shows NVRTC's messages, no Python traceback."""

    __module__ = "cuforge"

    def _render_traceback_(self) -> list[str]:
        return [f"CompileError: {self}"]


class ParseError(CuforgeError, ValueError):
    """A ``%%cuda`` cell's ``__global__`` signature cannot be read."""

    __module__ = "cuforge"
