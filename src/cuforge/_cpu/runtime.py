"""cuforge's CPU runtime library (``runtime.cpp``: the worker pool, the fibers' memory, the
fault guard, the watchdog that stops a launch on SIGINT or past its time limit), built once per
compiler and loaded with its symbols global before any kernel library, which calls into it; and
`run`, the one call that runs a launch's blocks."""

from __future__ import annotations

import _thread  # (threading's lock and thread-local types, without importing threading on a warm start)
import contextlib
import ctypes
import functools
import os
import struct
from typing import Any, NoReturn

from .. import _config
from .._compile import disk as _disk
from .._compile.files import digest
from .._digest import sha256
from ..errors import ConfigError
from . import store as _store
from . import toolchain as _toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, "include")  # cuforge_cpu.h and the CUDA headers' host shims
MESSAGE_BYTES = 2048


class Launch(ctypes.Structure):
    """``struct cuforge_cpu_launch`` (include/cuforge_cpu_abi.h)."""

    _fields_ = [
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_mem", ctypes.c_ulonglong),
        ("args", ctypes.c_void_p),
        ("cooperative", ctypes.c_int),
        ("cluster", ctypes.c_int * 3),
        ("status", ctypes.c_int),
        ("message", ctypes.c_char * MESSAGE_BYTES),
    ]


# Launch.status: a rule of the launch broken (barrier, warp function), a fault, a failed assert;
# and set by the runtime (cuforge_cpu_abi.h): stopped by SIGINT, stopped by the time limit
FAILED, FAULTED, ASSERTED = 1, 2, 3
INTERRUPTED, TIMED_OUT = 64, 65


@functools.lru_cache(maxsize=1)
def sources_digest() -> str:
    """A digest of the runtime header and library sources and of the translation: it enters
    every CPU compile's key. Remembered in the disk cache by each file's path, size and
    modification time, as the compiler's version is (and Python's bytecode by its source's):
    reading and hashing the sources was a millisecond of every process's first CPU launch."""
    files = [os.path.join(root, name) for root, _, names in sorted(os.walk(INCLUDE)) for name in sorted(names)]
    # (translate.py makes a kernel's translation unit, locals.py a checked one's guards, indexed.py its inline checks)
    files += [os.path.join(HERE, name) for name in ("runtime.cpp", "runtime.map", "translate.py", "locals.py", "indexed.py")]
    disk = _disk.current()
    if disk is None:
        return _sources_digest(files)
    stats = [(path, st.st_size, st.st_mtime_ns) for path in files for st in (os.stat(path),)]
    name = "cpu-sources:" + digest(repr(stats).encode())
    found = disk.get_text(name, quiet=True)
    if found:
        return found
    result = _sources_digest(files)
    disk.put_text(name, result)
    return result


def _sources_digest(files: list[str]) -> str:
    h = sha256()
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        h.update((os.path.basename(path).encode() + b"\0" + data) if path.startswith(INCLUDE) else data)
    return h.hexdigest()


_lock = _thread.allocate_lock()
_library: ctypes.CDLL | None = None


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    global _lock
    _lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def library() -> ctypes.CDLL:
    """The runtime library, built (or read from the cache) and loaded on first use."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                limit = _config.cpu_timeout()  # (checked before anything is built)
                compiler = _toolchain.find_compiler()
                # runtime.cpp is one of the sources `sources_digest` covers: the key needs only that
                # digest, and a warm start neither reads the source nor hashes it again
                lib = _store.shared_object("cuforge's CPU runtime", headers={}, include_dirs=(INCLUDE,),
                                           flags=(*_toolchain.compile_flags(compiler, debug=False), "-fvisibility=hidden",
                                                  f"-Wl,--version-script={os.path.join(HERE, 'runtime.map')}"),
                                           label="cuforge's CPU runtime", key_extra=(sources_digest(), _toolchain.host_cpu()),
                                           build=_runtime_source, global_symbols=True).library  # fmt: skip
                lib.cuforge_cpu_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Launch)]
                lib.cuforge_cpu_run.restype = None
                lib.cuforge_cpu_threads.argtypes = [ctypes.c_int]
                lib.cuforge_cpu_threads.restype = ctypes.c_int
                lib.cuforge_cpu_symbol_size.argtypes = [ctypes.c_void_p]
                lib.cuforge_cpu_symbol_size.restype = ctypes.c_ulonglong
                lib.cuforge_cpu_set_timeout.argtypes = [ctypes.c_double]
                lib.cuforge_cpu_set_timeout.restype = None
                lib.cuforge_cpu_set_timeout(limit)
                _config.on_change(functools.partial(_follow_time_limit, lib))
                _library = lib
    return _library


def _runtime_source() -> str:
    with open(os.path.join(HERE, "runtime.cpp"), encoding="utf-8") as f:
        return f.read()


def _follow_time_limit(lib: ctypes.CDLL) -> None:
    """The time limit after a change of settings (a bad value keeps the one in force: it was
    reported where it was first read, by the first CPU launch)."""
    with contextlib.suppress(ConfigError):
        lib.cuforge_cpu_set_timeout(_config.cpu_timeout())


def interrupted() -> NoReturn:
    """End a launch that SIGINT stopped: Python's handler runs now (in the main thread the
    default one raises KeyboardInterrupt, as it would have on the call's return); in another
    thread, or where the handler raises nothing, KeyboardInterrupt is raised here."""
    ctypes.pythonapi.PyErr_CheckSignals()  # (a PyDLL function: an exception the handler raises comes out here)
    raise KeyboardInterrupt


_tls = _thread._local()
_HEAD = struct.Struct("=6IQQ4i")  # grid, block, shared_mem, args, cooperative, cluster: the struct's first fields
_run: Any = None  # cuforge_cpu_run, once the library is loaded


def run(entry: int, grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int, args: int,
        *, cooperative: bool = False, cluster: tuple[int, int, int] | None = None) -> tuple[int, str]:  # fmt: skip
    """Run every block of a launch (``entry`` is a kernel library's ``cuforge_entry_<i>``,
    ``args`` the address of its kernelParams array); returns (0, "") or (status, message).
    A cooperative launch runs every block at once; a clustered one each cluster at once."""
    global _run
    launch = getattr(_tls, "launch", None)
    if launch is None:
        launch = _tls.launch = Launch()
        _tls.ref = ctypes.byref(launch)
    if _run is None:
        _run = library().cuforge_cpu_run
    _HEAD.pack_into(launch, 0, *grid, *block, shared_mem, args, int(cooperative or cluster is not None), *(cluster or (0, 0, 0)))
    launch.status = 0
    _run(entry, _tls.ref)
    if launch.status:
        return launch.status, launch.message.decode("utf-8", "replace")
    return 0, ""


def threads() -> int:
    """The pool's size: one worker per core (``CUFORGE_CPU_THREADS`` to change it)."""
    return int(library().cuforge_cpu_threads(0))


def variable(kernels: ctypes.CDLL, name: str) -> tuple[int, int] | None:
    """(address, bytes) of module variable ``name`` in a kernel library, or None."""
    try:
        address = ctypes.cast(getattr(kernels, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return None
    return address, int(library().cuforge_cpu_symbol_size(address))
