"""NVRTC's automatic precompiled headers, within one process.

Including CUB, Thrust or libcu++ costs NVRTC seconds of parsing. With automatic precompiled
headers (``--pch``), the first compile saves the parsed headers of its include prefix and
every later compile in the process whose source starts with the same includes reuses them.

NVRTC ties a PCH to the address of its PCH heap in the process that made it; elsewhere it
warns ("incompatible precompiled header (PCH) heap allocation address") and parses again. A
PCH therefore cannot serve another process, and, large as it is, it is not kept: the
files live in a private directory (0700) that is removed when the process exits (and,
should the process be killed, by the next process that makes one). What
outlives the process is the compiled kernels, in the persistent cache.

NVRTC maps a PCH file into memory, and a truncated one kills the process (SIGBUS). So the
size and modification time of each PCH are recorded when NVRTC makes it, and before a
compile any file in the directory that does not match its record (or has none) is
deleted: NVRTC then makes it again.

``CUFORGE_PCH``: ``auto`` (the default) asks for a PCH where the source includes CCCL's
headers, where it pays (creating one costs more than a plain compile); ``1``
for any include; ``0`` never.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import threading
from collections.abc import Iterator
from typing import Any

from .. import _config
from .stats import counters

_CCCL = re.compile(r'^\s*#\s*include\s*[<"](?:cub/|thrust/|cuda/|cooperative_groups|nv/)', re.M)
_ANY = re.compile(r"^\s*#\s*include\b", re.M)
_VERBOSE = re.compile(r'^"[^"\n]*": (creating|using) precompiled header file "[^"\n]*"\s*$', re.M)
_lock = threading.Lock()
_compiling = threading.Lock()
_dir: str | None = None
_owner = 0  # the pid that made _dir (a forked child makes its own)
_heap_set = False
_made: dict[str, tuple[int, int]] = {}  # PCH path -> (size, mtime_ns) when NVRTC made it
_off: str | None = None  # why PCHs were given up in this process (a full disk), if they were
HEAP_EXHAUSTED = 14  # NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED


def _after_fork() -> None:  # a fork's child has only the forking thread: a lock another one held would never open
    global _lock, _compiling
    _lock, _compiling = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def includes_cccl(source: str) -> bool:
    """Whether ``source`` includes CCCL's headers (CUB, Thrust, libcu++, cooperative groups)."""
    return _CCCL.search(source) is not None


@contextlib.contextmanager
def session(source: str) -> Iterator[tuple[str, ...]]:
    """The NVRTC flags that ask for a PCH for ``source`` (none where it would not pay), held
    for one compile: compiles with a PCH take turns (NVRTC runs one compile at a time in a
    process anyway), so that no file is checked while NVRTC writes it."""
    mode = _config.pch()
    pattern = _CCCL if mode == "auto" else _ANY
    if mode == "0" or _off is not None or not pattern.search(source) or not _supported():
        yield ()
        return
    directory = _directory()
    with _compiling:
        _drop_damaged(directory)
        # Warnings 20283 (where NVRTC stops the PCH, or why it makes none: cuforge's own #line
        # directives after the includes) and 630 (a PCH in the directory made for other
        # includes) are about cuforge's use of PCHs, not the user's code: kept out of the log.
        yield ("--pch", f"--pch-dir={directory}", "--pch-verbose=true", "--diag-suppress=20283,630")


@functools.lru_cache(maxsize=1)
def _supported() -> bool:
    """NVRTC 12.8 brought precompiled headers (an older one refuses --pch)."""
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return int(err) == 0 and (int(major), int(minor)) >= (12, 8)


def _directory() -> str:
    """This process's PCH directory, made on first use (and the NVRTC heap set to hold them)."""
    global _dir, _owner, _heap_set
    with _lock:
        if _dir is None or _owner != os.getpid():
            _remove_orphans()
            import tempfile  # here, not at import: a process that compiles nothing skips it

            _dir, _owner = tempfile.mkdtemp(prefix=f"cuforge-pch-{os.getpid()}-"), os.getpid()  # 0700
            _made.clear()
            atexit.register(_remove, _dir, _owner)
        if not _heap_set:
            _set_heap(_config.pch_heap_bytes())
            _heap_set = True
    return _dir


def _remove_orphans() -> None:
    """Remove the PCH directories of this user's processes that died without removing theirs
    (killed, or crashed), in the temporary directory."""
    import shutil
    import tempfile

    root = tempfile.gettempdir()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        parts = entry.name.split("-")
        if len(parts) != 4 or parts[:2] != ["cuforge", "pch"] or not parts[2].isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            os.kill(int(parts[2]), 0)
        except ProcessLookupError:  # its process is gone
            shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:  # alive (another user's, or EPERM), or unreadable: leave it
            continue


def _remove(directory: str, owner: int) -> None:
    if os.getpid() == owner:  # not a forked child's exit
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


def _drop_damaged(directory: str) -> None:
    with _lock:
        for entry in os.scandir(directory):
            st = entry.stat()
            if _made.get(entry.path) != (st.st_size, st.st_mtime_ns):
                _made.pop(entry.path, None)
                os.unlink(entry.path)


def _record(directory: str) -> None:
    with _lock:
        for entry in os.scandir(directory):
            if entry.path not in _made:
                st = entry.stat()
                _made[entry.path] = (st.st_size, st.st_mtime_ns)


def _set_heap(size: int) -> None:
    from cuda.bindings import nvrtc

    nvrtc.nvrtcSetPCHHeapSize(size)  # (NVRTC's default is too small for CUB's headers)


def failed(log: str) -> bool:
    """Whether a failed compile failed for want of room to write its PCH (a full disk, a
    quota, a file-size limit): NVRTC then stops with a catastrophic error. PCHs are given up
    for the process, and the caller compiles again without."""
    global _off
    if "unable to obtain mapped memory" in log or ("precompiled header" in log.lower() and "catastrophic" in log.lower()):
        _off = log.strip().splitlines()[0]
        return True
    return False


def after_compile(nvrtc: Any, prog: Any, log: str) -> str:
    """Count the PCH made or used (from the lines ``--pch-verbose`` writes, which are then
    dropped from the log the user sees) and grow the heap when it ran out, so that the next
    compile makes the PCH."""
    made = used = 0
    for m in _VERBOSE.finditer(log):
        made += m.group(1) == "creating"
        used += m.group(1) == "using"
    if made or used:
        counters.add(pch_creations=made, pch_hits=used)
        log = _VERBOSE.sub("", log).strip()
    if made and _dir is not None:
        _record(_dir)
    (status,) = nvrtc.nvrtcGetPCHCreateStatus(prog)
    if int(status) == HEAP_EXHAUSTED:
        err, need = nvrtc.nvrtcGetPCHHeapSizeRequired(prog)
        if int(err) == 0:
            with _lock:
                _set_heap(int(need) + (16 << 20))
    return log
