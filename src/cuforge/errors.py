"""The cuforge error tree.

Every error cuforge raises on purpose derives from :class:`CuforgeError`. Where an
error refines a builtin, it inherits that too, so ``except TypeError`` keeps working::

    CuforgeError (Exception)
    ├── DeclarationError (TypeError)     a kernel class is malformed; raised at definition
    ├── TemplateError                    Jinja could not render a body or template
    ├── CompileError                     NVRTC rejected the rendered source (.log, .source, .options)
    ├── ArgumentError (ValueError)       a launch argument is missing, extra or out of range
    │   └── ArgumentTypeError (TypeError)   a launch argument has the wrong type or dtype
    ├── SignatureMismatchError           a ``source=`` kernel disagrees with its annotations
    ├── NoDeviceError (RuntimeError)     no usable CUDA device or driver
    └── LaunchError (RuntimeError)       the driver refused a launch or a CUDA call failed
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "CompileError",
    "CuforgeError",
    "DeclarationError",
    "LaunchError",
    "NoDeviceError",
    "SignatureMismatchError",
    "TemplateError",
]


class CuforgeError(Exception):
    """Root of every error cuforge raises on purpose."""

    __module__ = "cuforge"


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
