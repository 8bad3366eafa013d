"""Reading NVIDIA compute-sanitizer's text report: its findings, each with the kernel it names.

The report's lines start with ``========= ``; a finding is a line at the first indent (``Invalid
__global__ write of size 4 bytes``, ``Error: Race reported between Write access at ...``,
``Uninitialized __global__ memory read of size 4 bytes``, ``Barrier error detected. ...``)
and the deeper-indented lines after it (``at Saxpy(float, ...)+0x70 in saxpy.cu:12``, ``by
thread (31,0,0) in block (7,0,0)``, ``Address 0x... is out of bounds``). Both spellings of a
device location are read: ``at 0x70 in [file:line:]Kernel(...)`` (older releases) and ``at
Kernel(...)+0x70 [in file:line]`` (newer ones)."""

from __future__ import annotations

import re
from typing import NamedTuple

PREFIX = "========= "
MAX_SHOWN = 8  # kinds of error a test failure lists
# What a first-indent line that is no finding starts with: the banner, the summary, host frames.
_NOT_FINDINGS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "RACECHECK SUMMARY", "Target application returned")
_OTHER_ACCESS = re.compile(r"and \w+ access at ")  # a race's second access
_LOCATION = re.compile(r"\bat (?:0x[0-9a-fA-F]+ in (?:\S+?:\d+:)?(?P<old>[^\n]+?\))|(?P<new>[^\n]+?\))\+0x[0-9a-fA-F]+)")


class Finding(NamedTuple):
    """One error compute-sanitizer reported: ``what`` it is, the ``kernel`` (the function it
    names, as it spells it: ``Saxpy`` or ``Axpy<float, 256>``; '' where it names none) and the
    ``details`` (its thread and block, address, other access)."""

    what: str
    kernel: str
    details: tuple[str, ...]


def _function_name(signature: str) -> str:
    """``void Axpy<float, 256>(float, const float *)`` -> ``Axpy<float, 256>``: the name before
    the parameters, without a return type (a space outside template brackets)."""
    head, depth, start = signature.split("(", 1)[0], 0, 0
    for i, c in enumerate(head):
        depth += (c == "<") - (c == ">")
        if c == " " and depth == 0:
            start = i + 1
    return head[start:].strip()


def _kernel_of(lines: list[str]) -> str:
    """The kernel a finding names: its outermost device frame where the report has a device
    backtrace (the access may be in a function the kernel calls), else where the access is."""
    frames = [line for line in lines if line.startswith("Device Frame:")]
    for line in [*(f.replace("Device Frame:", "at ", 1) for f in frames[-1:]), *lines]:
        found = _LOCATION.search(line)
        if found:
            return _function_name(found.group("old") or found.group("new"))
    return ""


def findings(report: str) -> list[Finding]:
    """The findings of a report (its other lines, such as the host backtrace, are left out)."""
    records: list[list[str]] = []
    for raw in report.splitlines():
        if not raw.startswith(PREFIX.rstrip()):
            continue
        text = raw[len(PREFIX) :] if raw.startswith(PREFIX) else ""
        if not text.strip():
            continue
        if not text.startswith(" "):
            records.append([text.strip()])
        elif records:
            records[-1].append(text.strip())
    found = []
    for what, *rest in records:
        if what.startswith(_NOT_FINDINGS):
            continue
        rest = [line for line in rest if not line.startswith(("Host Frame", "Saved host backtrace"))]
        # a race's header runs on to a second line ("and Read access at ..."): both name the accesses
        extra = [line for line in rest if _OTHER_ACCESS.match(line)]
        details = tuple(line for line in rest if not _OTHER_ACCESS.match(line) and not line.startswith("Device Frame:"))
        found.append(Finding(" ".join([what, *extra]), _kernel_of([what, *extra, *rest]), details))
    return found


def describe(tool: str, found: list[Finding]) -> str:
    """The findings as a test failure's lines: one per kind of error in a kernel, with the first
    such finding's details and how many more there were."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in found:
        what = re.sub(r"0x[0-9a-fA-F]+", "0x...", re.sub(r"\[\d+ hazards\]", "", f.what)).strip()
        groups.setdefault((f.kernel, what), []).append(f)
    lines = []
    for (kernel, _), group in list(groups.items())[:MAX_SHOWN]:
        first = group[0]
        more = f" (and {len(group) - 1} more like it)" if len(group) > 1 else ""
        where = f"in kernel {kernel}: " if kernel else ""
        lines.append(f"{tool}: {where}{first.what}{more}" + "".join(f"\n    {d}" for d in first.details))
    if len(groups) > MAX_SHOWN:
        lines.append(f"{tool}: and {len(groups) - MAX_SHOWN} more kinds of error (the whole report: run the test under "
                     f"compute-sanitizer --tool {tool})")  # fmt: skip
    return "\n".join(lines)
