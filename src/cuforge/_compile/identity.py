"""THE identity of a compile: what makes two compiles the same, written once and used by
every store (the memory cache, the disk cache) and by the ahead-of-time build.

`compile_inputs` is the kernel's own part (no path, nothing of the machine), which a build
records per entry; `cache_key` adds the exact flags and the machine's `toolchain`: the NVRTC
library and the CUDA headers, identified by their files without loading NVRTC (the
``toolchain`` module, which asks NVRTC itself, is for compiles).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .._digest import hexdigest
from .._version import __version__
from ..errors import DeclarationError
from ..options import CompileOptions
from .headers import cccl_include_dir, cuda_include_dir, nvidia_roots

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
    import json  # (on first use: a launch on the CPU keys its builds without it)

    kept = [f for f in flags if not f.startswith(("-arch=", "-I"))]
    return {
        "cuforge": __version__,
        "source": _sha(source),
        "name_expression": name_expression,
        "options": shell_join([f for f in kept if not f.startswith("-D")]),
        "defines": shell_join([f for f in kept if f.startswith("-D")]),
        "headers": _sha(json.dumps(sorted(headers.items()), ensure_ascii=False)) if headers else "",
        "include_dirs": include_digest,
        "link": _sha(json.dumps(list(links), ensure_ascii=False)) if links else "",
    }


# The characters shlex.quote leaves an argument of as it is (its unsafe ones are
# ``[^\w@%+=:,./-]``, ASCII): a kernel's usual flags have no other.
_SHELL_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def shell_join(args: list[str]) -> str:
    """``shlex.join(args)``: the same text, without importing shlex (and compiling its regex)
    where no argument needs quoting, as on a warm start."""
    if all(a and _SHELL_PLAIN.issuperset(a) for a in args):
        return " ".join(args)
    import shlex

    return shlex.join(args)


def toolchain(*, linked: bool) -> dict[str, str]:
    """The machine's part of a compile's identity: the NVRTC library, the CUDA headers it is
    given and, for a kernel that is linked, nvJitLink."""
    found = {
        "nvrtc": nvrtc_identity(),
        "cuda_headers": cuda_headers_version(cuda_include_dir()),
    }
    if linked:
        from .toolchain import nvjitlink_identity  # (loads nvJitLink, which a linked kernel's compile needs anyway)

        found["nvjitlink"] = nvjitlink_identity()
    return found


def _fingerprint(path: str) -> str:
    st = os.stat(path)
    return f"{os.path.basename(path)}:{st.st_size}:{st.st_mtime_ns}"


@functools.lru_cache(maxsize=4)
def cuda_headers_version(include_dir: str | None) -> str:
    """Identity of the CUDA headers NVRTC is given (cuda_runtime_api.h's size and mtime, and
    CCCL's cuda/version: a new toolkit, runtime or CCCL wheel changes them). Keys system
    headers by toolkit without reading them."""
    if not include_dir:
        return "none"
    marks = []
    for path in (os.path.join(include_dir, "cuda_runtime_api.h"), os.path.join(cccl_include_dir() or "", "cuda", "version")):
        try:
            marks.append(_fingerprint(path))
        except OSError:
            marks.append("unknown")
    return ";".join(marks)


@functools.lru_cache(maxsize=1)
def nvrtc_identity() -> str:
    """What identifies the NVRTC that compiles, for cache keys, without loading it.

    cuda.bindings finds NVRTC through cuda.pathfinder, which prefers an NVIDIA wheel in
    site-packages; that library file's size and mtime identify it (a wheel upgrade changes
    them) at the cost of a few stats. Loading NVRTC just to ask its version is too slow for a
    warm start; it is done only when no wheel is found (a system toolkit).
    """
    path = nvrtc_wheel_library()
    if path is not None:
        with contextlib.suppress(OSError):
            return f"wheel:{_fingerprint(path)}"
    from .toolchain import nvrtc_version  # (loads NVRTC: a system toolkit's only)

    return "nvrtc:{}.{}".format(*nvrtc_version())


@functools.lru_cache(maxsize=1)
def nvrtc_wheel_library() -> str | None:
    """The NVRTC library file of an NVIDIA wheel (what cuda.bindings loads), or None where
    NVRTC comes from a system toolkit."""
    roots = nvidia_roots()
    for root in roots:  # the wheels' known places first: a few stats, no directory listing
        for sub in ("cu13/lib/libnvrtc.so.13", "cuda_nvrtc/lib/libnvrtc.so.12", "cu12/lib/libnvrtc.so.12"):
            if os.path.isfile(os.path.join(root, sub)):
                return os.path.join(root, sub)
    import glob  # (only where the known places have none: glob imports fnmatch and its regexes)

    for root in roots:
        for pattern in ("*/lib/libnvrtc.so*", "*/bin/nvrtc64*.dll", "*/bin/*/nvrtc64*.dll"):
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                if "builtins" not in path and "alt" not in os.path.basename(path) and os.path.isfile(path):
                    return path
    return None


def cache_key(inputs: Mapping[str, str], flags: tuple[str, ...], tools: Mapping[str, str]) -> str:
    """A hex digest of everything that changes one compile's binary (never of its outputs or
    temp paths): ``inputs`` (`compile_inputs`), the exact ``flags`` (the arch, the
    include paths) and the toolchain (`toolchain`). The memory and disk caches key by
    it; an ahead-of-time build's manifest records ``inputs``."""
    import json  # (see compile_inputs)

    payload = [KEY_SCHEMA, sorted(inputs.items()), list(flags), sorted(tools.items())]
    return _sha(json.dumps(payload, ensure_ascii=False))


def inputs_of(unit: CompileUnit, flags: tuple[str, ...], options: CompileOptions) -> dict[str, str]:
    """``unit``'s `compile_inputs` for a compile with ``flags`` and ``options``: what its
    cache key and an ahead-of-time build's entry both hold. Needs no NVRTC."""
    return compile_inputs(
        source=unit.source,
        name_expression=unit.name_expression,
        flags=flags,
        headers=unit.headers,
        include_digest=include_dirs_digest(options.include_dirs),
        links=tuple(i.digest if not isinstance(i, str) else i for i in unit.links),
    )


def key_of(unit: CompileUnit, flags: tuple[str, ...], options: CompileOptions) -> str:
    """``unit``'s `cache_key` for a compile with ``flags`` and ``options``."""
    linked = bool(unit.links) or "-rdc=true" in flags
    return cache_key(inputs_of(unit, flags, options), flags, toolchain(linked=linked))


def resolve_options(unit: CompileUnit, options: CompileOptions | None, who: str) -> CompileOptions:
    """The options a compile of ``unit`` uses: ``options``, else the class's; relocatable
    where it links (its extern __device__ functions resolve at the link)."""
    opts = unit.options if options is None else options
    if not isinstance(opts, CompileOptions):
        raise DeclarationError(f"{who}: options must be a cuforge.CompileOptions, got {opts!r}")
    if unit.links and not opts.relocatable:
        opts = opts.replace(relocatable=True)
    return opts


def _sha(text: str) -> str:
    return hexdigest(text.encode())


_dir_digests: dict[tuple[str, ...], tuple[tuple[Any, ...], str]] = {}


def include_dirs_digest(dirs: tuple[str, ...]) -> str:
    """SHA-256 over the relative paths and contents of every regular file in ``dirs``.

    Re-hashed only when a file's (size, mtime) changes, so a compile() call that hits the
    memory cache stats the files but reads none. Anything else there (a FIFO, a socket, a
    device, a link to one) is left out: none is a header whose text a key could stand for,
    and reading a FIFO waits for a writer, reading /dev/zero never ends.
    """
    if not dirs:
        return ""
    files = []
    for d in dirs:
        for root, _, names in os.walk(d):
            for name in sorted(names):
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)  # (stat opens nothing: a FIFO is seen for what it is)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    files.append((d, os.path.relpath(path, d), st.st_size, st.st_mtime_ns))
    files.sort()
    signature = tuple(files)
    cached = _dir_digests.get(dirs)
    if cached is not None and cached[0] == signature:
        return cached[1]
    import hashlib  # (include folders can hold megabytes: OpenSSL's hash)

    h = hashlib.sha256()
    for d, rel, _, _ in files:
        h.update(rel.encode() + b"\0" + _file_digest(os.path.join(d, rel)))
    digest = h.hexdigest()
    _dir_digests[dirs] = (signature, digest)
    return digest


def _file_digest(path: str) -> bytes:
    """The SHA-256 of the regular file at ``path``, read in chunks; ``b"unreadable"`` when it
    cannot be read or is no longer a regular file (replaced since it was looked at: O_NONBLOCK
    keeps the open of a FIFO put there from waiting)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return b"unreadable"
    with open(fd, "rb", closefd=True) as fh:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b"unreadable"
            import hashlib

            h = hashlib.sha256()
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        except OSError:
            return b"unreadable"
    return h.digest()


class CompileUnit:
    """One kernel's part of an NVRTC program, as the kernel layer gives it
    (``Kernel._compile_unit``), so that compiling reads records, not kernels.

    A program holds one ``prelude`` and the ``unit`` of each kernel compiled in it (kernels
    of one family share their prelude); ``source`` is what one kernel alone compiles.
    """

    __slots__ = ("declaration", "family", "headers", "label", "line_sources", "links", "name", "name_expression",
                 "on_compiled", "options", "prelude", "qualname", "source_text", "unit")  # fmt: skip

    def __init__(self, *, label: str, name: str, qualname: str, name_expression: str, prelude: str, unit: str,
                 line_sources: Mapping[str, str], headers: Mapping[str, str], options: CompileOptions,
                 links: tuple[Any, ...], source_text: str | None, declaration: int, family: bool,
                 on_compiled: Callable[[Any], None]) -> None:  # fmt: skip
        self.label = label  # the kernel as messages name it: "Axpy[float32, 256]"
        self.name = name  # the C++ name, for the program's name
        self.qualname = qualname  # the declaring class's module and name: an ahead-of-time build's entries
        self.name_expression = name_expression  # what NVRTC looks up: "Axpy<float, 256>"
        self.prelude = prelude
        self.unit = unit
        self.line_sources = line_sources  # #line file names -> their text, for error messages
        self.headers = headers  # template headers, given to NVRTC in memory
        self.options = options  # the class's
        self.links = links  # what it is linked with: Modules, ObjectCodes, CUDA C++ sources
        self.source_text = source_text  # the source= text it is declared over, if any
        self.declaration = declaration  # one value per declaration: a family's instantiations share it
        self.family = family  # an instantiation of a template
        self.on_compiled = on_compiled  # told of each CompiledKernel made for it, sibling compiles included

    @property
    def source(self) -> str:
        """The translation unit of this kernel alone."""
        return self.prelude + self.unit


class Compilable(Protocol):
    """What the compile layer takes: an object that describes its compile."""

    def _compile_unit(self) -> CompileUnit: ...
