"""Reading a kernel's resource use out of a cubin, without a GPU.

A cubin is an ELF file; ``.nv.info`` holds per-function attributes (register count, frame
and stack sizes) keyed by symbol index, and ``.nv.shared.<symbol>`` sections size the static
shared memory. The attribute codes are those cuobjdump prints (EIATTR_REGCOUNT, ...).
"""

from __future__ import annotations

import struct

_EIATTR = {0x2F: "registers", 0x11: "frame_bytes", 0x23: "max_stack_bytes", 0x12: "min_stack_bytes"}
_EIFMT_SVAL = 0x04


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


def cubin_resources(elf: bytes, symbol: str) -> dict[str, int]:
    """Resource use of ``symbol`` in cubin ``elf``: registers, frame/stack bytes, static shared
    bytes. Keys are missing where the cubin does not say; an unreadable image gives {}."""
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
        for sname, _, off, size, _ in sections:
            if sname == ".nv.info":
                pos, stop = off, off + size
                while pos + 2 <= stop:
                    fmt, attr = elf[pos], elf[pos + 1]
                    if fmt != _EIFMT_SVAL:
                        pos += {1: 2, 2: 4, 3: 4}.get(fmt, 2)
                        continue
                    length = struct.unpack_from("<H", elf, pos + 2)[0]
                    if attr in _EIATTR and length == 8:
                        sym, value = struct.unpack_from("<II", elf, pos + 4)
                        if sym == index:
                            out[_EIATTR[attr]] = value
                    pos += 4 + length
            elif sname == f".nv.shared.{symbol}":
                out["shared_bytes"] = size
        out.setdefault("shared_bytes", 0)
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
