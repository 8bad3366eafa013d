"""Helpers for testing kernels; the public face is ``cuforge.testing``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from .._declare.dtypes import DType, dtype_of
from .._kernel.family import Family
from .._kernel.kernel import Kernel
from .._runtime import cuda as _cuda
from .._runtime.device_array import DeviceArray, to_device
from ..errors import CuforgeError

__all__ = ["assert_kernel_matches", "default_tolerance", "parametrize_family", "random_array"]

_TOLERANCE = {
    "float16": (5e-3, 5e-3),
    "bfloat16": (3e-2, 3e-2),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-13),
    "complex64": (1e-5, 1e-6),
    "complex128": (1e-12, 1e-13),
}


def default_tolerance(dtype: DType) -> tuple[float, float]:
    """(rtol, atol) for comparing results of ``dtype``; exact for integers and bool."""
    return _TOLERANCE.get(dtype.name, (0.0, 0.0))


def _instance_id(k: Kernel) -> str:
    return "-".join(getattr(v, "name", str(v)) for v in k.template_args.values()) or k.name


def parametrize_family(family: Family, argname: str = "kernel", **subset: Any) -> Any:
    """``@parametrize_family(Axpy, T=[cf.float32, cf.float64])``: one test per instantiation
    (restricted to the given values), with ids such as ``float32-256``."""
    __tracebackhide__ = True  # (a mistake shows the test module's line and the message)
    if not isinstance(family, Family):
        raise TypeError(f"parametrize_family expects a cuforge family, got {family!r}")
    names = {t.name for t in family.template_params}
    unknown = set(subset) - names
    if unknown:
        raise TypeError(
            f"parametrize_family({family.name}): unknown template parameter(s) {sorted(unknown)}; "
            f"the family's are {sorted(names)}"
        )
    wanted = {n: [dtype_of(v) if isinstance(v, (DType, np.dtype, type)) else v for v in vals] for n, vals in subset.items()}
    kernels = [k for k in family.instantiations() if all(k.template_args[n] in vals for n, vals in wanted.items())]
    return pytest.mark.parametrize(argname, kernels, ids=[_instance_id(k) for k in kernels])


def random_array(shape: Any, dtype: Any, seed: int = 0) -> np.ndarray:
    """A reproducible host array: normal floats, small ints (non-negative for unsigned), random bools."""
    __tracebackhide__ = True
    dt = dtype_of(dtype)
    if dt is None:
        raise TypeError(f"random_array: {dtype!r} is not a cuforge dtype")
    rng = np.random.default_rng(seed)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.is_integer:
        low = 0 if dt.kind == "u" else -100
        return rng.integers(low, 100, size=shape).astype(dt.numpy)
    if dt.is_complex:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt.numpy)
    return rng.standard_normal(shape).astype(dt.numpy)


def _host_copy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, DeviceArray):
        return value.to_numpy()
    if hasattr(value, "get") and type(value).__module__.split(".")[0] == "cupy":
        return value.get()
    if hasattr(value, "cpu") and type(value).__module__.split(".")[0] == "torch":
        return value.detach().cpu().numpy()
    return np.asarray(value).copy()


def _on_cpu(launch: dict[str, Any]) -> bool:
    """Whether the kernel runs on the CPU: ``device=`` says, else the thread's or process's
    choice, else the CPU where no GPU is usable but a C++ compiler is found (else the GPU,
    whose launch then says what is missing)."""
    if "device" in launch:
        return bool(launch["device"] == "cpu")
    if _cuda.on_cpu():
        return True
    if _cuda.gpu_available():
        return False
    from .._cpu.toolchain import find_compiler
    from ..errors import CompilerNotFoundError

    try:
        find_compiler()
    except CompilerNotFoundError:
        return False
    return True


def assert_kernel_matches(
    kernel: Kernel | Family, reference: Any, *args: Any, rtol: float | None = None, atol: float | None = None, **launch: Any
) -> None:
    """Run ``kernel`` on copies of ``args`` and ``reference`` (a NumPy function that writes its
    array arguments in place, as the kernel does) on other host copies, then compare every
    array the kernel writes. The caller's arrays are not modified.

    Where the launch goes to the GPU, the kernel gets device copies. It runs on cuforge's CPU
    backend, on host copies in place, where ``device="cpu"`` is passed, where the CPU is this
    thread's or this process's device (`set_device`, CUFORGE_DEVICE, the pytest plugin's
    ``--cuforge-device``), or where no GPU is usable and a C++ compiler is found, so that one
    test checks a kernel on either.

    Tolerances default by dtype (exact for integers); a mismatch reports the argument, the
    first differing index and both values, and how many elements differ.
    """
    __tracebackhide__ = True  # a failure shows the test's line and the message, not this helper's source
    k = kernel.select(*args) if isinstance(kernel, Family) else kernel
    params = k.signature.params
    if len(args) != len(params):
        raise TypeError(f"assert_kernel_matches: {k.label} takes {len(params)} arguments, got {len(args)}")
    host = [_host_copy(a) if p.is_array else a for p, a in zip(params, args)]
    on_cpu = _on_cpu(launch)
    if on_cpu and "device" not in launch:
        launch = {**launch, "device": "cpu"}
    stage = (lambda h: h.copy()) if on_cpu else (lambda h: to_device(h.copy()))
    device: list[Any] = [stage(h) if p.is_array else h for p, h in zip(params, host)]
    try:
        k(*device, **launch)  # a CPU launch returns when the kernel has run
    except CuforgeError as exc:  # its message names the kernel and the fix; cuforge's frames would bury it
        raise exc.with_traceback(None)  # noqa: B904  (the same exception, from here: the frames below are cuforge's)
    if not on_cpu:
        _cuda.synchronize()
    reference(*host)
    for p, h, d in zip(params, host, device):
        if not (p.is_array and p.type.writes):
            continue
        got, want = (d if on_cpu else d.to_numpy()), np.asarray(h)
        r, a = default_tolerance(p.dtype)
        r, a = (r if rtol is None else rtol), (a if atol is None else atol)
        wide = np.complex128 if p.dtype.is_complex else np.float64
        g, w = got.astype(wide), want.astype(wide)
        ok = np.isclose(g, w, rtol=r, atol=a, equal_nan=True)
        if not ok.all():
            bad = np.argwhere(~ok)
            first = tuple(int(i) for i in bad[0])
            raise AssertionError(
                f"{k.label}: argument '{p.name}' differs from the reference at index {first}: got {got[first]!r}, "
                f"expected {want[first]!r} (rtol={r}, atol={a}); {len(bad)} of {got.size} elements differ"
            )
