"""Reading a kernel's resource use out of a cubin, without a GPU.

A cubin is an ELF file; ``.nv.info`` holds per-function attributes (register count, frame
and stack sizes) keyed by symbol index, ``.nv.info.<symbol>`` one function's own (its
``__launch_bounds__``), and ``.nv.shared.<symbol>`` sections size the static shared memory.
The attribute codes are those cuobjdump prints (EIATTR_REGCOUNT, ...).

Shared memory: from sm_90 on, ptxas lays out a block's shared memory with the 1 KiB the
system reserves per block (``CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK``) at its
start, and a cubin that does so has a ``.nv.shared.reserved.0`` section; the
``.nv.shared.<symbol>`` section of a function that uses shared memory (static or
``extern``) then counts that 1 KiB too (a function that uses none may have no such section).
The driver's static shared size (``CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES``) does not count it,
nor does an sm_80 cubin, whose reserved 1 KiB the driver adds at launch.
`cubin_resources` reports the driver's figure as ``shared_bytes`` and the reserved part
the section counts as ``reserved_shared_bytes``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

_EIATTR = {0x2F: "registers", 0x11: "frame_bytes", 0x23: "max_stack_bytes", 0x12: "min_stack_bytes"}
_EIATTR_MAX_THREADS = 0x05  # in .nv.info.<symbol>: __launch_bounds__'s threads, as (x, y, z)
_EIFMT_SVAL = 0x04
RESERVED_SHARED = 1024  # bytes per block the system keeps (sm_80 and newer)


def _sections(elf: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, type, offset, size, link) for each section."""
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    raw = [struct.unpack_from("<IIQQQQII", elf, shoff + i * shentsize) for i in range(shnum)]
    names_off = raw[shstrndx][4]

    def name(off: int) -> str:
        end = elf.index(b"\x00", names_off + off)
        return elf[names_off + off : end].decode()

    return [(name(r[0]), r[1], r[4], r[5], r[6]) for r in raw]


def _attributes(elf: bytes, off: int, size: int) -> Iterator[tuple[int, int, int]]:
    """(attribute, payload offset, payload length) of each sized attribute of an .nv.info section."""
    pos, stop = off, off + size
    while pos + 2 <= stop:
        fmt, attr = elf[pos], elf[pos + 1]
        if fmt != _EIFMT_SVAL:
            pos += {1: 2, 2: 4, 3: 4}.get(fmt, 2)
            continue
        length = struct.unpack_from("<H", elf, pos + 2)[0]
        yield attr, pos + 4, length
        pos += 4 + length


def cubin_resources(elf: bytes, symbol: str) -> dict[str, int]:
    """Resource use of ``symbol`` in cubin ``elf``: registers, frame/stack bytes, static shared
    bytes as the driver counts them (``shared_bytes``), the reserved shared memory the cubin
    counts besides (``reserved_shared_bytes``, see the module docstring), and the threads per
    block its ``__launch_bounds__`` allows (``max_threads``). Keys are missing where the cubin
    does not say; an unreadable image gives {}."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return {}
    try:
        sections = _sections(elf)
        symtab = next(s for s in sections if s[0] == ".symtab")
        strtab = sections[symtab[4]]
        index = None
        for i in range(symtab[3] // 24):
            st_name = struct.unpack_from("<I", elf, symtab[2] + i * 24)[0]
            end = elf.index(b"\x00", strtab[2] + st_name)
            if elf[strtab[2] + st_name : end].decode() == symbol:
                index = i
                break
        if index is None:
            return {}
        out: dict[str, int] = {}
        shared = 0
        for sname, _, off, size, _ in sections:
            if sname == ".nv.info":
                for attr, at, length in _attributes(elf, off, size):
                    if attr in _EIATTR and length == 8:
                        sym, value = struct.unpack_from("<II", elf, at)
                        if sym == index:
                            out[_EIATTR[attr]] = value
            elif sname == f".nv.info.{symbol}":
                for attr, at, length in _attributes(elf, off, size):
                    if attr == _EIATTR_MAX_THREADS and length == 12:
                        x, y, z = struct.unpack_from("<III", elf, at)
                        out["max_threads"] = x * y * z
            elif sname == f".nv.shared.{symbol}":
                shared = size
        if any(s[0].startswith(".nv.shared.reserved.") for s in sections):
            out["reserved_shared_bytes"] = min(shared, RESERVED_SHARED)
            shared -= out["reserved_shared_bytes"]
        out["shared_bytes"] = shared
        return out
    except (struct.error, ValueError, IndexError, StopIteration):
        return {}


def cubin_entries(elf: bytes) -> list[str]:
    """The kernel entry points of a cubin (each has a ``.nv.info.<symbol>`` section)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return []
    try:
        return [name[len(".nv.info.") :] for name, *_ in _sections(elf) if name.startswith(".nv.info.")]
    except (struct.error, ValueError, IndexError):
        return []
