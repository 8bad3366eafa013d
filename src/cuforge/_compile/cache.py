"""The in-process compile cache: one compile per key, even when threads ask at once.

Keys hash a versioned tuple of everything that changes the binary (`cache_key`: the
kernel's own inputs, `compile_inputs`, which an ahead-of-time build also records, plus the
exact flags and the toolchain). The persistent disk layer (``_disk``) plugs in where
`compile_together` finds a key
missing: a disk hit fills the memory layer the same way a compile does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from .. import _config
from .._runtime import cuda as _cuda
from .._version import __version__
from ..errors import CompileError, DeclarationError, NoDeviceError
from ..options import CompileOptions, check_arch, to_flags
from . import disk as _disk
from . import nvrtc as _compile
from .artifact import CompiledKernel
from .stats import counters

KEY_SCHEMA = 2


def compile_inputs(
    *,
    source: str,
    name_expression: str,
    flags: tuple[str, ...],
    headers: Mapping[str, str],
    include_digest: str = "",
    links: tuple[str, ...] = (),
) -> dict[str, str]:
    """What the kernel's own code decides about one compile, by name: THE identity of a
    compile, less the arch and the machine's toolchain (see `cache_key`, which adds them).

    An ahead-of-time build records this per entry, and a process serving the build recomputes
    it (with no NVRTC call) to refuse a stale entry and name what changed. So it holds no
    path and nothing of the toolkit: the flags less ``-arch`` and ``-I`` (include directories
    count by their files' contents, ``include_digest``), split into ``defines`` (``-D``) and
    ``options``; digests of the source, the in-memory ``headers`` and the ``links`` (what
    the kernel is linked with: digests of modules, source strings); and cuforge's version.
    """
    kept = [f for f in flags if not f.startswith(("-arch=", "-I"))]
    return {
        "cuforge": __version__,
        "source": _sha(source),
        "name_expression": name_expression,
        "options": shlex.join(f for f in kept if not f.startswith("-D")),
        "defines": shlex.join(f for f in kept if f.startswith("-D")),
        "headers": _sha(json.dumps(sorted(headers.items()), ensure_ascii=False)) if headers else "",
        "include_dirs": include_digest,
        "link": _sha(json.dumps(list(links), ensure_ascii=False)) if links else "",
    }


def toolchain(*, linked: bool) -> dict[str, str]:
    """The machine's part of a compile's identity: the NVRTC library, the CUDA headers it is
    given and, for a kernel that is linked, nvJitLink (see ``_compile``)."""
    found = {
        "nvrtc": _compile.nvrtc_identity(),
        "cuda_headers": _compile.cuda_headers_version(_compile.cuda_include_dir()),
    }
    if linked:
        found["nvjitlink"] = _compile.nvjitlink_identity()
    return found


def cache_key(inputs: Mapping[str, str], flags: tuple[str, ...], tools: Mapping[str, str]) -> str:
    """A hex digest of everything that changes one compile's binary (never of its outputs or
    temp paths): ``inputs`` (`compile_inputs`), the exact ``flags`` (the arch, the
    include paths) and the toolchain (`toolchain`). The memory and disk caches key by
    it; an ahead-of-time build's manifest records ``inputs``."""
    payload = [KEY_SCHEMA, sorted(inputs.items()), list(flags), sorted(tools.items())]
    return _sha(json.dumps(payload, ensure_ascii=False))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def resolve_options(kernel: Any, options: CompileOptions | None, who: str) -> CompileOptions:
    """The options a compile of ``kernel`` uses: ``options``, else the class's; relocatable
    where it links (its extern __device__ functions resolve at the link)."""
    opts = kernel.options if options is None else options
    if not isinstance(opts, CompileOptions):
        raise DeclarationError(f"{who}: options must be a cuforge.CompileOptions, got {opts!r}")
    if kernel._decl.link and not opts.relocatable:
        opts = opts.replace(relocatable=True)
    return opts


_dir_digests: dict[tuple[str, ...], tuple[tuple[Any, ...], str]] = {}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)


def include_dirs_digest(dirs: tuple[str, ...]) -> str:
    """SHA-256 over the relative paths and contents of every file in ``dirs``.

    Re-hashed only when a file's (size, mtime) changes, so a compile() call that hits the
    memory cache stats the files but reads none.
    """
    if not dirs:
        return ""
    files = []
    for d in dirs:
        for root, _, names in os.walk(d):
            for name in sorted(names):
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                files.append((d, os.path.relpath(path, d), st.st_size, st.st_mtime_ns))
    files.sort()
    signature = tuple(files)
    cached = _dir_digests.get(dirs)
    if cached is not None and cached[0] == signature:
        return cached[1]
    h = hashlib.sha256()
    for d, rel, _, _ in files:
        h.update(rel.encode() + b"\0")
        try:
            with open(os.path.join(d, rel), "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
        except OSError:
            h.update(b"unreadable")
    digest = h.hexdigest()
    _dir_digests[dirs] = (signature, digest)
    return digest


def template_headers(source: str, dirs: tuple[str, ...]) -> dict[str, str]:
    """Headers ``source`` includes (directly or through each other) that live in the
    template directories ``dirs``: read here and passed to NVRTC in memory, so their
    contents are part of the key and a header edit recompiles."""
    found: dict[str, str] = {}
    pending = _INCLUDE.findall(source)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        for d in dirs:
            path = os.path.join(d, name)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as fh:
                    found[name] = fh.read()
                pending += _INCLUDE.findall(found[name])
                break
    return found


class MemoryCache:
    """A thread-safe map from key to compiled result, with single-flight compiles."""

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}
        self._inflight: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def gates(self, keys: list[str]) -> Iterator[None]:
        """Hold the compile gates of ``keys`` (taken in sorted order, so two batches that share
        keys cannot deadlock): inside, re-check the cache, compile what is missing, put it."""
        with self._lock:
            locks = [self._inflight.setdefault(k, threading.Lock()) for k in sorted(set(keys))]
        with contextlib.ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            yield

    def get(self, key: str) -> Any:
        """The cached value for ``key``, or None (counts a hit when found)."""
        found = self._items.get(key)
        if found is not None:
            counters.add(memory_hits=1)
        return found

    def peek(self, key: str) -> Any:
        """The cached value for ``key`` or None, counting nothing."""
        return self._items.get(key)

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items.setdefault(key, value)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


memory = MemoryCache()


# ---------------------------------------------------------------- compiling through the caches


_targets: dict[int, str] = {}


def device_target(cc: int) -> str:
    """The arch for a device, without loading NVRTC when the disk cache already knows which
    archs this NVRTC supports (a warm start then makes no NVRTC call at all). Remembered per
    process: threads launching for the first time ask at once."""
    found = _targets.get(cc)
    if found is None:
        found = _targets[cc] = _device_target(cc)
    return found


def _device_target(cc: int) -> str:
    disk = _disk.current()
    name = f"nvrtc-archs:{_compile.nvrtc_identity()}"
    record = disk.get_json(name) if disk is not None else None
    if record is not None and isinstance(record.get("archs"), list):
        return _compile.target_for(cc, tuple(record["archs"]))
    archs = _compile.supported_archs()
    if disk is not None:
        disk.put_json(name, {"archs": list(archs)})
    return _compile.target_for(cc, archs)


def default_arch(who: str) -> str:
    """The arch to compile for when none is given: the current GPU's, else CUFORGE_ARCH."""
    try:
        return device_target(_cuda.current_device().cc)
    except NoDeviceError as exc:
        arch = _config.arch()
        if not arch:
            raise NoDeviceError(
                f"{who}: {exc}; pass arch='sm_90' (or set CUFORGE_ARCH=sm_90) to compile without a GPU"
            ) from None
        return arch


def compile_together(
    kernels: list[Any], arch: str | None, options: CompileOptions | None, *, who: str
) -> list[CompiledKernel]:
    """Compile kernels of one declaration (one prelude, one unit each, one name expression
    each), with the kernels declared over the same source= text: one NVRTC program, or
    several when a heavy family is split (``_parallel``); kernels already in the memory cache
    are not compiled again."""
    first = kernels[0]
    arch = check_arch(arch if arch is not None else default_arch(who))
    opts = resolve_options(first, options, who)
    flags = to_flags(opts, arch, _compile.include_dirs())
    keys = [k._key(flags, opts) for k in kernels]
    found = [memory.get(key) for key in keys]
    if any(f is None for f in found):
        missing = [key for key, f in zip(keys, found) if f is None]
        siblings = _siblings(kernels, options, flags, opts)
        with memory.gates(missing + [key for _, key in siblings]):  # one compile per key in this process
            disk = _disk.current()
            if not _from_disk(kernels, keys, arch, disk):
                lock = disk.locks(missing, _config.cache_lock_seconds()) if disk else contextlib.nullcontext()
                with lock:  # one compile per key across processes
                    if not _from_disk(kernels, keys, arch, disk, recheck=True):
                        _compile_with_siblings(kernels, keys, siblings, arch, flags, disk)
    results = [f if f is not None else memory.peek(key) for f, key in zip(found, keys)]
    for k, ck in zip(kernels, results):
        k._compiled[ck.arch, ck.flags] = ck
    return results


def compile_each(kernels: list[Any], arch: str | None, options: CompileOptions | None, *,
                 who: str) -> tuple[list[CompiledKernel | None], list[tuple[Any, CompileError]]]:  # fmt: skip
    """`compile_together`, where one kernel that cannot compile (its source, or ptxas: too
    much shared memory) keeps none of the others from compiling: (the results, None for a
    failed kernel; the (kernel, error) of each failure). Where the program fails, each kernel is
    compiled alone (those compiled meanwhile come from the memory cache)."""
    try:
        return list(compile_together(kernels, arch, options, who=who)), []
    except CompileError as exc:
        if len(kernels) == 1:
            return [None], [(kernels[0], exc)]
    results: list[CompiledKernel | None] = []
    failed: list[tuple[Any, CompileError]] = []
    for k in kernels:
        try:
            results += compile_together([k], arch, options, who=who)
        except CompileError as exc:
            results.append(None)
            failed.append((k, exc))
    return results, failed


_by_source: dict[str, weakref.WeakSet[Any]] = {}  # a source= text -> the kernels declared over it


def note_source_kernel(kernel: Any) -> None:
    """Remember a kernel declared over a source= text: its siblings compile with it."""
    with _source_lock:
        _by_source.setdefault(kernel._decl.source, weakref.WeakSet()).add(kernel)


_source_lock = threading.Lock()


def _siblings(kernels: list[Any], options: CompileOptions | None, flags: tuple[str, ...],
              opts: CompileOptions) -> list[tuple[Any, str]]:  # fmt: skip
    """(kernel, key) of the other kernels declared over the same source= text, with the same
    options, not compiled yet: one source is one NVRTC program, as CuPy's RawModule makes it
    (a family's instantiations and sibling declarations alike)."""
    first = kernels[0]
    if options is not None or first._decl.source is None or first._decl.module is not None:
        return []
    with _source_lock:
        group = list(_by_source.get(first._decl.source, ()))
    out = []
    for s in group:
        if not any(s is k for k in kernels) and same_program(first, s) and memory.peek(key := s._key(flags, opts)) is None:
            out.append((s, key))
    return out


def same_program(a: Any, b: Any) -> bool:
    """Whether kernels ``a`` and ``b`` compile as one NVRTC program: declared over one source=
    text (not prebuilt), with the same options and links, and the same prelude (a source= family
    whose name expressions need cuforge's headers has them before the text; a plain kernel over
    that text does not). The in-process cache and the ahead-of-time build both group by it."""
    da, db = a._decl, b._decl
    if da.source is None or da.module is not None or db.module is not None or da.source != db.source:
        return False
    return a.options == b.options and da.link == db.link and a._pieces()[0] == b._pieces()[0]


def _compile_with_siblings(kernels: list[Any], keys: list[str], siblings: list[tuple[Any, str]], arch: str,
                           flags: tuple[str, ...], disk: _disk.DiskCache | None) -> None:  # fmt: skip
    """Compile ``kernels`` with the siblings that neither memory nor disk holds; where that
    program fails, ``kernels`` alone, so that a sibling's own mistake is reported when it is
    compiled, not here."""
    others = [(s, key) for s, key in siblings if memory.peek(key) is None]
    others = [(s, key) for s, key in others if not _from_disk([s], [key], arch, disk)]
    if not others:
        _compile_missing(kernels, keys, arch, flags, disk)
        return
    try:
        _compile_missing(kernels + [s for s, _ in others], keys + [key for _, key in others], arch, flags, disk)
    except CompileError:
        _compile_missing(kernels, keys, arch, flags, disk)
        return
    for s, key in others:
        ck = memory.peek(key)
        s._compiled[ck.arch, ck.flags] = ck


def _from_disk(kernels: list[Any], keys: list[str], arch: str, disk: _disk.DiskCache | None, *, recheck: bool = False) -> bool:
    """Fill the memory cache from disk where it can; True when nothing is left to compile."""
    done = True
    for k, key in zip(kernels, keys):
        if memory.peek(key) is not None:
            continue
        stored = disk.load(key, recheck=recheck) if disk is not None else None
        if stored is None or k.name_expression not in stored.lowered:
            done = False
            continue
        memory.put(key, CompiledKernel(k, arch, stored, k.name_expression, k.render()))
    return done


def _compile_missing(
    kernels: list[Any], keys: list[str], arch: str, flags: tuple[str, ...], disk: _disk.DiskCache | None
) -> None:
    pending = {key: k for k, key in zip(kernels, keys) if memory.peek(key) is None}
    todo = list(pending.values())
    if not todo:
        return
    from .._launch import graph as _graph  # (NVRTC's side: imported by the first compile, not at start-up)
    from . import link as _link
    from . import parallel as _parallel

    first = todo[0]
    capture = _graph.capture_in_thread()
    if capture is not None:
        raise capture.refuse(
            f"{first.label}: its first compile (NVRTC) would run inside cf.graph(); compile before the capture: "
            f"launch it once, or call .compile() (Family.precompile() for a family), then open the capture"
        )
    prelude = first._pieces()[0]
    key_of = {id(k): key for key, k in pending.items()}

    def spec_of(group: list[Any]) -> dict[str, Any]:
        """compile_program's arguments for one NVRTC program of ``group`` (one prelude, a unit each)."""
        units, line_sources, headers = [], {}, {}
        for k in group:
            _, unit, lines = k._pieces()
            units.append(unit)
            line_sources.update(lines)
            headers.update(k._headers())
        return {
            "source": prelude + "".join(units),
            "headers": headers,
            "program_name": f"{first.name}.cu",
            "name_expressions": tuple(dict.fromkeys(k.name_expression for k in group)),
            "flags": flags,
            "kernel": group[0].label if len(group) == 1 else f"{first.name} ({len(group)} instantiations)",
            "line_sources": line_sources,
        }

    for group, result in _parallel.compile_groups(todo, flags, spec_of, first._decl):
        if "-rdc=true" in flags:
            result = _link.link_result(result, group[0], arch, flags)
        for k in group:
            key = key_of[id(k)]
            memory.put(key, CompiledKernel(k, arch, result, k.name_expression, prelude + k._pieces()[1]))
            if disk is not None:
                disk.store(key, result)
