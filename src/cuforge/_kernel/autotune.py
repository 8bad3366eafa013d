"""Autotuning of a family: `Autotune` (what ``cf.autotune(...)`` declares) and `Tuner`, which
picks a family's integer parameters for a call by timing the candidates once per GPU, types
and size bucket, and keeps the choice in the disk cache.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._compile import disk as _disk
from .._declare.annotations import ArrayType
from .._declare.declaration import Declaration
from .._declare.dtypes import DType
from .._declare.spelling import spell_combination
from .._declare.value_params import IntParam
from .._runtime import cuda as _cuda
from .._runtime.arrays import array_arg
from .._runtime.device_array import scratch_copy
from ..errors import DeclarationError, DeviceFaultError
from .kernel import Kernel

__all__ = ["Autotune", "Tuner", "autotune"]

timing_runs = 0  # candidate timings made by autotuning in this process (tests count them)


class Autotune:
    """What a family tunes: candidate values of integer parameters, and the arguments whose
    sizes key the choice (rounded up to a power of two). Built by [`autotune`][cuforge.autotune].

    Examples
    --------
    >>> cf.autotune(BLOCK=[128, 256], key=["n"]).candidates
    {'BLOCK': (128, 256)}
    """

    __module__ = "cuforge"

    def __init__(self, key: Sequence[str] = (), warmup: int = 2, repeat: int = 10, **candidates: Iterable[int]):
        if not candidates:
            raise DeclarationError("cf.autotune(...) needs candidates, e.g. cf.autotune(BLOCK=[128, 256], key=['n'])")
        self.candidates = {name: tuple(values) for name, values in candidates.items()}
        self.key = (key,) if isinstance(key, str) else tuple(key)
        self.warmup, self.repeat = int(warmup), int(repeat)

    def __repr__(self) -> str:
        cands = ", ".join(f"{k}={list(v)}" for k, v in self.candidates.items())
        return f"cuforge.autotune({cands}, key={list(self.key)})"


def autotune(*, key: Sequence[str] = (), warmup: int = 2, repeat: int = 10, **candidates: Iterable[int]) -> Autotune:
    """Declare autotuning for a family: ``autotune = cf.autotune(BLOCK=[128, 256, 512], key=["n"])``.

    On the first call for a key on a GPU, each candidate is timed with CUDA events on scratch
    copies of the written arrays (the caller's outputs are never touched), the fastest is
    chosen, and the choice is stored in the disk cache per (GPU, kernel, instantiation
    source, key).

    Parameters
    ----------
    key : sequence of str
        Parameters whose sizes (an array's element count, an integer's value, rounded up to a
        power of two) key the choice.
    warmup, repeat : int
        Untimed and timed launches of each candidate.
    **candidates : iterable of int
        For each integer template parameter to tune, the values to try.

    Returns
    -------
    Autotune

    Raises
    ------
    DeclarationError
        With no candidates (and, when the class is defined, for a name that is not one of its
        integer parameters or a value it does not allow).

    Examples
    --------
    >>> @cf.kernel
    ... class Tuned:
    ...     BLOCK = cf.intparam(128, 256, 512)
    ...     x: cf.Array[cf.float32]
    ...     n: cf.int64
    ...     block = "BLOCK"
    ...     autotune = cf.autotune(BLOCK=[128, 256, 512], key=["n"])
    ...     body = "long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) x[i] += 1;"
    >>> x = cf.zeros(1 << 16, cf.float32)  # doctest: +GPU
    >>> Tuned(x, 1 << 16)  # times 128, 256 and 512 on a scratch copy of x, then launches  # doctest: +GPU
    >>> len(Tuned.tuning()), float(x.to_numpy()[0])  # doctest: +GPU
    (1, 1.0)
    """
    return Autotune(key, warmup, repeat, **candidates)


def checked(at: Any, decl: Declaration) -> Autotune | None:
    """The class's ``autotune``, checked against its integer parameters and parameters."""
    if at is None:
        return None
    label, names = decl.label, [n for n, _ in decl.params]
    if not isinstance(at, Autotune):
        raise DeclarationError(f"{label}: autotune must be cf.autotune(...), got {at!r}")
    ints = {t.name: t for t in decl.template_params if isinstance(t, IntParam)}
    for name, values in at.candidates.items():
        if name not in ints:
            raise DeclarationError(
                f"{label}: autotune candidate {name!r} is not an intparam of this family (intparams: {', '.join(ints) or 'none'})"
            )
        for v in values:
            ints[name].resolve(v, label)
    for k in at.key:
        if k not in names:
            raise DeclarationError(f"{label}: autotune key {k!r} names no parameter; the parameters are {', '.join(names)}")
        ann = dict(decl.params)[k]
        if not isinstance(ann, ArrayType) and not (isinstance(ann, DType) and ann.is_integer):
            raise DeclarationError(f"{label}: autotune key {k!r} must be an integer or array parameter")
    return at


def _shape(value: Any) -> tuple[int, ...]:
    arg = array_arg(value)
    return arg.shape if arg is not None else ()


def _origin(value: Any) -> str | None:
    arg = array_arg(value)
    return arg.origin if arg is not None else None


def _bucket(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


class Tuner:
    """One family's autotuning: the choice per (types, size buckets) of this process, and the
    table `Family.tuning` shows. ``candidate(types, choice)`` is the family's instantiation of
    a call's types with a candidate's values, or None where ``restrict`` leaves it out."""

    def __init__(self, at: Autotune, decl: Declaration, candidate: Callable[[tuple[Any, ...], dict[str, int]], Kernel | None]):
        self.at, self.decl, self.candidate = at, decl, candidate
        names = [n for n, _ in decl.params]
        annotations = dict(decl.params)
        # where each key is read off the bound arguments, and whether it is an array's size
        self.keys = tuple((names.index(k), isinstance(annotations[k], ArrayType)) for k in at.key)
        self.choices: dict[tuple[Any, ...], dict[str, int]] = {}
        self.table: list[dict[str, Any]] = []

    def choice(self, types: tuple[Any, ...], bound: tuple[Any, ...], shared_mem: Any = 0) -> dict[str, int]:
        """The integer parameters for a call with these types and arguments: chosen before in
        this process, read from disk, or timed now."""
        buckets = tuple(_bucket(math.prod(_shape(bound[i])) if is_array else int(bound[i])) for i, is_array in self.keys)
        memo = (types, buckets)
        found = self.choices.get(memo)
        if found is not None:
            return found
        candidates, kernels = self._candidates(types)
        device = _cuda.current_device()
        source_hash = hashlib.sha256("".join(k.render() for k in kernels).encode()).hexdigest()[:16]
        key_text = ",".join(f"{k}={b}" for k, b in zip(self.at.key, buckets)) or "-"
        types_text = ",".join(ty.name for ty in types if ty is not None)
        record_key = f"{device.name}|{types_text}|{key_text}|{source_hash}"
        store = _TuningStore(self.decl.qualname)
        record = store.get(record_key)
        origin = "disk"
        if record is None or record.get("choice") not in candidates:
            record = self._timed(candidates, kernels, bound, shared_mem)
            store.put(record_key, record)
            origin = "timed"
        self.choices[memo] = dict(record["choice"])
        self.table.append({"types": types_text, "key": key_text, "gpu": device.name, "choice": dict(record["choice"]),
                           "times_ms": record["times_ms"], "from": origin})  # fmt: skip
        return self.choices[memo]

    def _candidates(self, types: tuple[Any, ...]) -> tuple[list[dict[str, int]], list[Kernel]]:
        """The candidates ``restrict`` keeps for these types, and their instantiations."""
        at = self.at
        candidates, kernels = [], []
        for combo in itertools.product(*at.candidates.values()):
            c = dict(zip(at.candidates, combo))
            k = self.candidate(types, c)
            if k is not None:
                candidates.append(c)
                kernels.append(k)
        if not kernels:
            typed = [(t, ty) for t, ty in zip(self.decl.template_params, types) if ty is not None]
            where = f" for {spell_combination(*zip(*typed))}" if typed else ""
            raise DeclarationError(
                f"{self.decl.label}: the class's restrict {self.decl.restrict} leaves out every autotune candidate"
                f"{where}; add candidates it keeps"
            )
        return candidates, kernels

    def _timed(self, candidates: list[dict[str, int]], kernels: list[Kernel], bound: tuple[Any, ...],
               shared_mem: Any) -> dict[str, Any]:  # fmt: skip
        """The record of timing every candidate now: the fastest, and each one's time."""
        from .._launch.capture import capture_in_thread  # (where a family is tuned: start-up)

        capture = capture_in_thread()
        if capture is not None:
            raise capture.refuse(
                f"{self.decl.label}: autotuning would time {len(kernels)} candidates here, which a CUDA graph "
                f"cannot hold; call the family once with these shapes before cf.graph(), so the choice is made"
            )
        times = self._time(kernels, bound, self.at, shared_mem)
        best = min(range(len(kernels)), key=lambda i: times[i])
        return {"choice": candidates[best], "times_ms": [[c, t] for c, t in zip(candidates, times)]}

    def _time(self, kernels: list[Kernel], bound: tuple[Any, ...], at: Autotune, shared_mem: Any = 0) -> list[float]:
        """Milliseconds per launch of each candidate, on scratch copies of the arrays it writes
        (an Optional one given None stays None), with the call's dynamic shared memory (a candidate launched without what its
        ``extern __shared__`` array needs would fault the GPU). A fault is named as the
        candidate's, while tuning."""
        global timing_runs

        params = kernels[0].signature.params
        keep: list[Any] = []
        args = []
        for p, value in zip(params, bound):
            if p.is_array and value is not None and (p.type.writes or _origin(value) == "numpy"):  # None: Optional
                copy = scratch_copy(value, p.dtype)
                keep.append(copy)
                args.append(copy)
            else:
                args.append(value)
        driver = _cuda.bindings()
        start = _cuda.check(driver.cuEventCreate(0), "cuEventCreate")
        stop = _cuda.check(driver.cuEventCreate(0), "cuEventCreate")
        times = []
        try:
            for k in kernels:
                where = f"autotuning {self.decl.label}: candidate {k.name_expression} (shared_mem={shared_mem})"
                try:
                    for _ in range(at.warmup):
                        k(*args, stream=0, shared_mem=shared_mem)
                    _cuda.check(driver.cuEventRecord(start, 0), "cuEventRecord")
                    for _ in range(at.repeat):
                        k(*args, stream=0, shared_mem=shared_mem)
                    _cuda.check(driver.cuEventRecord(stop, 0), "cuEventRecord")
                    _cuda.check(driver.cuEventSynchronize(stop), where)
                except DeviceFaultError as exc:  # reported by whichever call came next: say it was the tuning
                    raise DeviceFaultError(f"{where} faulted the GPU: {exc}") from None
                ms = _cuda.check(driver.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
                times.append(float(ms) / at.repeat)
                timing_runs += 1
        finally:
            driver.cuEventDestroy(start)
            driver.cuEventDestroy(stop)
        return times


class _TuningStore:
    """Autotuning choices of one family, as checksummed JSON records in the disk cache (the
    same directory, atomic writes and damage checks as compiled kernels). With the disk
    cache off, choices last for the process only."""

    def __init__(self, qualname: str):
        self.prefix = f"tune:{qualname}|"

    def get(self, key: str) -> dict[str, Any] | None:
        disk = _disk.current()
        return disk.get_json(self.prefix + key) if disk is not None else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        disk = _disk.current()
        if disk is not None:
            disk.put_json(self.prefix + key, record)
