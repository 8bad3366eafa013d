"""The CPU backend's translation unit: a kernel's rendered CUDA C++ made host C++.

Three changes, each keeping every line where it was (so that the compiler's messages point at
the body's lines, as NVRTC's do):

- constructs the CPU cannot run (inline PTX, CUB and Thrust, textures, dynamic parallelism,
  tensor-core ``wmma``/``mma``) are refused, naming the construct and the line; so are the
  host calls that would end the Python process (``abort``, ``exit``, ``throw``), which NVRTC
  refuses too;
- ``__shared__`` declarations become references into the running block's shared memory, and
  ``extern __shared__`` arrays pointers to its dynamic part (``cuforge_cpu.h``);
- an ``extern "C"`` entry per kernel (its name expression) is appended, which the launch looks
  up (module variables stay visible under their own names: ``cuforge_cpu.h``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ..errors import CompileError
from .locals import follow_locals

HEADER = '#include "cuforge_cpu.h"\n'

# What cannot run on the CPU, each with what to say about it.
_REFUSED: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), what)
    for pattern, what in (
        (r"\basm\b\s*(volatile\b\s*)?\(|\b__asm__\b", "inline PTX (asm)"),
        (r"#\s*include\s*[<\"]thrust/|\bthrust::", "Thrust device code"),
        (r"#\s*include\s*[<\"]cub/(?!(?:cub|block/block_(?:reduce|scan|load|store)|warp/warp_(?:reduce|scan)|util_type|"
         r"thread/thread_operators)\.cuh[>\"])"
         r"|\bcub::(?!(?:Block(?:Reduce|Scan|Load|Store)(?:Algorithm)?|Warp(?:Reduce|Scan)|BLOCK_(?:REDUCE|SCAN|LOAD|STORE)_\w+|"
         r"(?:Load|Store)Direct\w+|Uninitialized|NullType|RowMajorTid|LaneId|KeyValuePair|ArgMin|ArgMax|InequalityWrapper)\b)\w+",
         "CUB device code other than cub::BlockReduce, BlockScan, BlockLoad, BlockStore, WarpReduce, WarpScan, "
         "KeyValuePair, ArgMin and ArgMax"),
        (r"\btex(1D|2D|3D|1Dfetch|Cubemap)\w*\s*[<(]|\bsurf(1D|2D|3D)\w*\s*[<(]|\bcuda(Texture|Surface)Object_t\b",
         "textures and surfaces"),
        (r"<<<", "dynamic parallelism (a launch from device code)"),
        (r"\bwmma::|\bmma_sync\b|\b__hmma\w*|\bmma\.sync\b", "tensor-core matrix operations (wmma/mma)"),
    )
)  # fmt: skip

# Calls that end the process, signal it, or end a worker thread (or, for throw, reach
# std::terminate), which NVRTC refuses as host functions or exception handling, and which on
# the CPU would end (or hang) the Python interpreter. A member (.exit(), ->abort()) or another
# namespace's function (ns::exit) is not the C library's; terminate only as std::terminate (a
# kernel's own terminate() is plausible).
_ENDS_PROCESS = re.compile(
    r"(?<![\w.:])(?<!->)(?:::\s*)?(?:"
    r"(?:std\s*::\s*)?(?P<call>abort|exit|_Exit|quick_exit|__builtin_trap|__builtin_abort|__assert_fail|raise|kill|"
    r"pthread_exit)"
    r"|std\s*::\s*(?P<terminate>terminate))\s*\("
    r"|\b(?P<throw>throw)\b(?!\s*\(\s*\))"
)
_WORD_BEFORE = re.compile(r"\b(\w+)\s*\Z")
_BEFORE_A_CALL = frozenset(("return", "else", "do", "case", "co_return", "co_yield"))  # (words a call may follow)

# What makes a block's threads wait for each other: without any of these in the source, its
# threads run as a plain loop (cuforge_cpu.h refuses a call to one of them that comes anyway;
# libcu++'s barriers, pipelines and atomics wait by polling, which must let the others run).
_SYNCS = re.compile(
    r"\b(__syncthreads\w*|__syncwarp|__shfl\w*|__ballot_sync|__any_sync|__all_sync|__match_\w+|__reduce_\w+_sync|"
    r"__activemask|__lanemask\w*|__nanosleep|cooperative_groups|this_thread_block|this_grid|this_cluster|tiled_partition|"
    r"coalesced_threads|labeled_partition|binary_partition|cub|"
    r"sync|shfl\w*|ballot|any|all|match_\w+|"
    r"barrier|arrive\w*|pipeline\w*|atomic|atomic_ref)\b"
)
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
# An alignment a declaration asks for: __align__(E), alignas(E) or __attribute__((aligned(E))), E
# any constant expression with up to two levels of parentheses (sizeof(T), (16), 4 * 4).
_PARENS = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
_ALIGN = rf"(?:(?:__align__|alignas)\s*{_PARENS}\s*|__attribute__\s*\({_PARENS}\)\s*)"
_ALIGNED = re.compile(
    rf"(?:__align__|alignas)\s*\((?P<e>(?:[^()]|{_PARENS})*)\)|\baligned\b\s*(?:\((?P<a>(?:[^()]|{_PARENS})*)\))?"
)
_EXTERN_SHARED = re.compile(
    rf"\bextern\s+(?:volatile\s+)?__shared__\s+{_ALIGN}?(?P<type>[\w:<>,\s*]+?)\s*{_ALIGN}?\b(?P<name>\w+)\s*\[\s*\]\s*;"
)
_SHARED = re.compile(
    rf"(?:\bstatic\s+)?(?P<volatile>volatile\s+)?__shared__\s+{_ALIGN}?(?P<type>(?:[\w:]+(?:\s*<[^;{{}}]*?>)?[\s*&]*?)+?)"
    rf"\s*{_ALIGN}?(?P<decls>\b\w+\s*(?:\[[^;\]]*\]\s*)*(?:,\s*\w+\s*(?:\[[^;\]]*\]\s*)*)*);"
)
_DECLARATOR = re.compile(r"(\w+)\s*((?:\[[^\]]*\]\s*)*)")


def _refused(message: str, source: str) -> CompileError:
    return CompileError(message, log=message, source=source, options=())


def masked(source: str) -> str:
    """``source`` with comments and literals blanked out (same length, same newlines)."""
    return _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)


def _line(source: str, plain: str, at: int, line_sources: Mapping[str, str]) -> str:
    """Where ``at`` is, as the ``#line`` directives before it name it ("Saxpy.body", line 3).
    The directives are read from ``source`` (``plain``, its masked text, has their file names
    blanked), those in comments left out."""
    before = source[:at]
    found = [m for m in re.finditer(r'^#line (\d+) "([^"]+)"\n', before, re.MULTILINE) if plain[m.start()] == "#"]
    directive = found[-1] if found else None
    if directive is None:
        return f"line {before.count(chr(10)) + 1}"
    line = int(directive.group(1)) + before[directive.end():].count("\n")  # fmt: skip
    text = line_sources.get(directive.group(2), "").splitlines()
    shown = f": {text[line - 1].strip()}" if 0 < line <= len(text) else ""
    return f"{directive.group(2)}, line {line}{shown}"


# Host headers and a macro that the host compiler has and NVRTC does not (it cannot open them),
# each with what NVRTC takes instead: a CPU build that took them would pass a test whose kernel
# then fails to compile for the GPU.
_HOST_ONLY: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.MULTILINE), instead)
    for pattern, instead in (
        (r"^[ \t]*#[ \t]*include[ \t]*<(float\.h|cfloat)>", "<cuda/std/cfloat>"),
        (r"^[ \t]*#[ \t]*include[ \t]*<(assert\.h|cassert)>", "<cuda/std/cassert>"),
        (r"^[ \t]*#[ \t]*include[ \t]*<(limits\.h|climits)>", "<cuda/std/climits>"),
        (r"^[ \t]*#[ \t]*include[ \t]*<(stdio\.h|cstdio)>", "nothing: device code's printf needs no header"),
    )
)  # fmt: skip
_INFINITY = re.compile(r"\bINFINITY\b")


def refuse_host_only(label: str, plain: str, source: str, line_sources: Mapping[str, str]) -> None:
    """Raise CompileError for a host header NVRTC cannot open, or a bare ``INFINITY``."""
    for pattern, instead in _HOST_ONLY:
        m = pattern.search(plain)
        if m is not None:
            raise _refused(
                f"{label}: <{m.group(1)}> is a host header that NVRTC cannot open, so the kernel would not compile for "
                f"a GPU ({_line(source, plain, m.start(), line_sources)}); include {instead}",
                source,
            )
    m = _INFINITY.search(plain)
    if m is not None and not re.search(r"^[ \t]*#[ \t]*define[ \t]+INFINITY\b", plain, re.MULTILINE):
        raise _refused(
            f"{label}: INFINITY is a macro of the host's <math.h>, which NVRTC does not define, so the kernel would not "
            f"compile for a GPU ({_line(source, plain, m.start(), line_sources)}); use CUDART_INF_F from "
            f"<math_constants.h>, or cuda::std::numeric_limits<float>::infinity() from <cuda/std/limits>",
            source,
        )


def refuse_unsupported(label: str, source: str, line_sources: Mapping[str, str]) -> None:
    """Raise CompileError for the first construct the CPU backend cannot run, or that NVRTC
    would refuse (a host header, a host function that ends the process)."""
    plain = masked(source)
    refuse_process_exits(label, plain, source, line_sources)
    refuse_host_only(label, plain, source, line_sources)
    for pattern, what in _REFUSED:
        m = pattern.search(plain)
        if m is not None:
            raise _refused(
                f"{label}: {what} cannot run on the CPU ({_line(source, plain, m.start(), line_sources)}); "
                f"launch it on a GPU with device='cuda', or write that part in plain CUDA C++",
                source,
            )


def cpu_refusal(source: str) -> str | None:
    """What in ``source`` the CPU cannot run (the first construct `refuse_unsupported` would
    refuse), or None: for messages that must not offer the CPU."""
    plain = masked(source)
    return next((what for pattern, what in _REFUSED if pattern.search(plain)), None)


def refuse_process_exits(label: str, plain: str, source: str, line_sources: Mapping[str, str]) -> None:
    """Raise CompileError for the first call that would end the process (``_ENDS_PROCESS``);
    a declaration of the name (``int exit(int v)``: a type before it) is the source's own."""
    for m in _ENDS_PROCESS.finditer(plain):
        before = _WORD_BEFORE.search(plain, 0, m.start())
        if m.group("throw") or before is None or before.group(1) in _BEFORE_A_CALL:
            break
    else:
        return
    where = _line(source, plain, m.start(), line_sources)
    if m.group("throw"):
        what = "throw: device code does not support exception handling (NVRTC refuses it too)"
    else:
        name = "".join(m.group()[:-1].split())  # (as written: std::exit, ::abort)
        what = f"{name}() is a host function, which device code cannot call (NVRTC refuses it too)"
    raise _refused(
        f"{label}: {what}, and on the CPU it would end (or hang) the Python process ({where}); to end the launch "
        f"with an error, call __trap() or assert(condition), which raise DeviceFaultError",
        source,
    )


def _rewrite_shared(label: str, source: str, plain: str, line_sources: Mapping[str, str], checked: bool = False) -> str:
    edits: list[tuple[int, int, str]] = []
    for m in _EXTERN_SHARED.finditer(plain):
        ctype = re.sub(_ALIGN, "", source[m.start("type"):m.end("type")]).strip()  # fmt: skip
        name = m.group("name")
        where = (f'cuforge_cpu::check_dynamic_shared("{ctype} {name}[]", sizeof({ctype}))' if checked
                 else "cuforge_cpu::dynamic_shared()")  # fmt: skip
        # (an array of unknown bound, as CUDA's: reinterpret_cast<T&>(name) and &name keep their meaning; a lambda
        # that captures it by copy does not compile, docs/guide/cpu.md)
        edits.append((m.start(), m.end(), f"{ctype} (&{name})[] = *reinterpret_cast<{ctype} (*)[]>({where});"))
    taken = [(s, e) for s, e, _ in edits]
    for m in _SHARED.finditer(plain):
        if any(s <= m.start() < e for s, e in taken):
            continue
        if _depth(plain, m.start()) == 0:
            raise _refused(
                f"{label}: a __shared__ variable at namespace scope ({_line(source, plain, m.start(), line_sources)}) cannot "
                f"run on the CPU; declare it inside the kernel (or the __device__ function) that uses it",
                source,
            )
        ctype = (m.group("volatile") or "") + source[m.start("type"):m.end("type")].strip()  # fmt: skip
        align = _asked_alignment(source[m.start():m.start("decls")])  # fmt: skip
        out = []
        for d in _DECLARATOR.finditer(plain[m.start("decls"):m.end("decls")]):  # fmt: skip
            name = d.group(1)
            dims_src = source[m.start("decls") + d.start(2):m.start("decls") + d.end(2)].strip()  # fmt: skip
            t = f"cuforge_shared_{name}_t"
            at_least = f"(alignof({t}) > size_t({align}) ? alignof({t}) : size_t({align}))" if align else f"alignof({t})"
            offset = (
                f'cuforge_cpu::check_shared_offset(sizeof({t}), {at_least}, sizeof(std::remove_all_extents_t<{t}>), "{name}")'
                if checked
                else f"cuforge_cpu::static_shared_offset(sizeof({t}), {at_least})"
            )
            out.append(
                f"typedef {ctype} {t}{dims_src}; {_static_limit(t, name, ctype + dims_src)} "
                f"static const size_t cuforge_shared_{name}_at = {offset}; "
                f"{t}& {name} = *reinterpret_cast<{t}*>(cuforge_cpu::block_shared(cuforge_shared_{name}_at, sizeof({t}), "
                f'"{name}"));'
            )
        edits.append((m.start(), m.end(), " ".join(out)))
    for start, end, text in sorted(edits, reverse=True):
        newlines = source.count("\n", start, end)
        source = source[:start] + text + "\n" * newlines + source[end:]
    return source


def _asked_alignment(declaration: str) -> str | None:
    """The alignment a ``__shared__`` declaration asks for beyond its type's, as a C++ constant
    expression (``__attribute__((aligned))`` alone: 16, the largest a GPU's types need), or None."""
    for m in _ALIGNED.finditer(declaration):
        if m.group("e") is not None:
            return f"({m.group('e').strip()})"
        if m.group(0).startswith("aligned"):
            return f"({m.group('a').strip()})" if m.group("a") else "16"
    return None


def _static_limit(typedef: str, name: str, declared: str) -> str:
    """A declaration's check of the GPU's limit on a kernel's static shared memory, at compile
    time (the total of a kernel's declarations is checked as they are reached: cuforge_cpu.h)."""
    message = (f"__shared__ '{name}' ({' '.join(declared.split())}) is more than the 48 KiB (49152 bytes) of static shared "
               f"memory a kernel can have on a GPU; use dynamic shared memory (an extern __shared__ array sized by "
               f"shared_mem=, up to 227 KiB per block with the opt-in)")  # fmt: skip
    quoted = message.replace("\\", "\\\\").replace('"', '\\"')
    return f'static_assert(sizeof({typedef}) <= cuforge_cpu::STATIC_SHARED_LIMIT, "{quoted}");'


def _depth(plain: str, at: int) -> int:
    """The brace depth at ``at``, minus namespace and extern "C" braces: 0 at namespace scope."""
    depth = 0
    for m in re.finditer(r"\bnamespace\b[^{;]*\{|\bextern\s*\"C\"\s*\{|\{|\}", plain[:at]):
        token = m.group()
        if token == "}":
            depth = max(depth - 1, 0) if depth else 0
        elif token.startswith(("namespace", "extern")):
            continue
        else:
            depth += 1
    return depth


def translation_unit(label: str, source: str, line_sources: Mapping[str, str], entries: Sequence[tuple[str, int]],
                     *, linked: bool = False, checked: bool | str = False) -> str:  # fmt: skip
    """The host C++ of a rendered program: its kernels' ``entries`` (name expression, number of
    parameters) become ``cuforge_entry_<i>``. A unit ``linked`` with others into one library
    never runs its threads as a plain loop, whose built-ins are the unit's own. ``checked``: the
    build of a checked launch (``check.py``), whose threads announce themselves to the checker
    and never run as a plain loop either, and whose local variables declared without an
    initializer are followed (``locals.py``); ``checked="indexed"``: a checked build whose indexes
    into array parameters are checked inline instead (``source`` is ``indexed.rewrite``'s)."""
    refuse_unsupported(label, source, line_sources)
    plain = _is_plain(source) and not linked and not checked
    if checked:  # (local variables without an initializer: the checker follows them)
        source = follow_locals(source, masked(source))
    return _assemble(label, _rewritten(label, source, line_sources, bool(checked)), plain, entries, checked=checked)


def _rewritten(label: str, source: str, line_sources: Mapping[str, str], checked: bool = False) -> str:
    """``source`` as the CPU compiles it: CUDA's ``__noinline__`` as GCC's attribute, the types
    ``__shared__`` declarations define named, static module variables exported, and the
    ``__shared__`` declarations in the block's arena."""
    source = _export_static_variables(_name_shared_types(_rewrite_noinline(_expand_shared_macros(source))))
    return _rewrite_shared(label, source, masked(source), line_sources, checked)


# A one-line macro that declares a __shared__ variable whose `;` comes at its use (TensorFlow's
# `#define GPU_DYNAMIC_SHARED_MEM_DECL(ALIGN, TYPE, NAME) extern __shared__ __align__(ALIGN) TYPE
# NAME[]`): a declaration the rewriting of __shared__ declarations would not see. (One whose body
# ends in its `;` is rewritten where it is defined.)
_SHARED_MACRO = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+(?P<name>\w+)(?:\((?P<params>[^()\n]*)\))?[ \t]+(?P<body>[^\n#]*\b__shared__\b[^\n#]*?)[ \t]*$",
    re.M,
)


def _expand_shared_macros(source: str) -> str:
    """``source`` with each use of such a macro expanded where it stands (its lines kept)."""
    done: set[str] = set()
    while True:
        plain = masked(source)
        m = next((d for d in _SHARED_MACRO.finditer(plain)
                  if d.group("name") not in done and not d.group("body").endswith(("\\", ";"))), None)  # fmt: skip
        if m is None:
            return source
        name, body = m.group("name"), source[m.start("body"):m.end("body")]  # fmt: skip
        done.add(name)
        params = None if m.group("params") is None else [p.strip() for p in m.group("params").split(",") if p.strip()]
        edits = []
        for use in re.finditer(rf"\b{name}\b", plain[m.end():]):
            start = m.end() + use.start()
            end = start + len(name)
            text = body
            if params is not None:
                args = _call_arguments(plain, end)
                if args is None:
                    continue
                spans, end = args
                values = [source[a:b].strip() for a, b in spans]
                values = [] if values == [""] and not params else values  # (a macro of no parameters: D())
                if len(values) != len(params):
                    continue
                text = re.sub(r"\b\w+\b", _replacing(dict(zip(params, values))), body)
            edits.append((start, end, text + "\n" * source.count("\n", start, end)))
        for start, end, text in reversed(edits):
            source = source[:start] + text + source[end:]


def _replacing(names: dict[str, str]) -> Callable[[re.Match[str]], str]:
    """A re.sub replacement that puts each word of ``names`` for its value (a macro's arguments)."""
    return lambda word: names.get(word.group(), word.group())


def _call_arguments(plain: str, at: int) -> tuple[list[tuple[int, int]], int] | None:
    """The spans of the arguments of a call whose `(` follows ``at`` (after spaces), and the end of
    its `)`; None where none follows."""
    i = at
    while i < len(plain) and plain[i] in " \t":
        i += 1
    if i >= len(plain) or plain[i] != "(":
        return None
    spans, depth, begin = [], 0, i + 1
    for j in range(i, len(plain)):
        c = plain[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                spans.append((begin, j))
                return spans, j + 1
        elif c == "," and depth == 1:
            spans.append((begin, j))
            begin = j + 1
    return None


# A module variable declared static (`static __constant__ unsigned c_Table[3][31];`, the CUDA
# samples' way): set_global and get_global find it by name, as they find it on a GPU (where its
# symbol is the internal one, `_ZL7c_Table`), so the CPU build drops the `static` (blanks, on its
# line) of a variable at namespace scope. A static __device__ function keeps it.
_STATIC_VARIABLE = re.compile(r"\bstatic\b(?=\s+(?:(?:const|volatile)\s+)*__(?:constant|device)__\b[^;(){}=]*[;=\[])")


def _export_static_variables(source: str) -> str:
    plain = masked(source)
    out, last = [], 0
    for m in _STATIC_VARIABLE.finditer(plain):
        if _depth(plain, m.start()) == 0:
            out += [source[last : m.start()], " " * len("static")]
            last = m.end()
    return "".join(out) + source[last:]


# CUDA's __noinline__ function specifier. The CPU build's crt/host_defines.h makes the token the
# attribute's name (libstdc++ writes __attribute__((__noinline__)) since GCC 13), so a kernel's
# own use is written out as the attribute, on its line (the same length or longer: columns after
# it move, lines do not).
_NOINLINE = re.compile(r"\b__noinline__\b")
_IN_ATTRIBUTE = re.compile(r"__attribute__\s*\(\([^;{}]*\Z")


# A __shared__ declaration of a type defined in it (`__shared__ union { ... } temp;`, CUB's way of
# sharing TempStorage between collectives): the type is named and defined first, on the same
# lines, so that the declaration is one the shared-memory rewrite knows.
_SHARED_TYPE = re.compile(r"(?:\bstatic\s+)?(?:volatile\s+)?__shared__\s+(?P<kind>struct|union|class)\b\s*(?P<name>\w+)?\s*\{")


def _name_shared_types(source: str) -> str:
    plain = masked(source)
    out, last, n = [], 0, 0
    for m in _SHARED_TYPE.finditer(plain):
        if m.start() < last:
            continue
        depth, i = 1, m.end()
        while i < len(plain) and depth:
            depth += {"{": 1, "}": -1}.get(plain[i], 0)
            i += 1
        if depth:
            break
        name = m.group("name") or f"cuforge_shared_type_{n}"
        n += 1
        head = source[m.start() : m.start("kind")]  # (static, volatile, __shared__)
        out += [source[last : m.start()], f"{m.group('kind')} {name} ", source[m.end() - 1 : i], "; ", head, name, " "]
        last = i
    return "".join(out) + source[last:]


def _rewrite_noinline(source: str) -> str:
    plain = masked(source)
    out, last = [], 0
    for m in _NOINLINE.finditer(plain):
        if _IN_ATTRIBUTE.search(plain, max(0, m.start() - 200), m.start()):  # (already an attribute's name)
            continue
        out += [source[last : m.start()], "__attribute__((noinline))"]
        last = m.end()
    return "".join(out) + source[last:]


def _is_plain(source: str) -> bool:
    """Whether the program names no barrier or warp function: its threads run as a plain loop."""
    return _SYNCS.search(masked(source)) is None


def program_file(label: str) -> str:
    """The file name the compiler's messages give the program's lines before any ``#line``
    (a ``source=`` kernel's text): NVRTC's program name."""
    return re.sub(r'["\\\n]', "_", label) + ".cu"


def _assemble(label: str, body: str, plain: bool, entries: Sequence[tuple[str, int]], *, checked: bool | str = False) -> str:
    # A kernel is taken by its address among the functions of its name that return void and
    # take its number of parameters: a C library function of the same name (select, time,
    # sync, ...) is another overload at namespace scope, which the address alone would not pick.
    tail = ['\n#line 1 "cuforge_cpu_entries"']
    for n in sorted({n for _, n in entries}):
        head = f"template <{', '.join(f'class A{i}' for i in range(n))}> " if n else ""
        args = ", ".join(f"A{i}" for i in range(n))
        tail.append(f"namespace cuforge_cpu {{ {head}constexpr auto kernel_with_{n}_params(void (*k)({args})) {{ return k; }} }}")
    tail.append('extern "C" {')
    for i, (expression, n) in enumerate(entries):
        kernel = f"cuforge_cpu::kernel_with_{n}_params(&{expression})"
        if checked:  # (each thread announces itself to the checker first)
            kernel = f"&cuforge_cpu::checked<{kernel}>::run"
        tail.append(
            f"CF_EXPORT void cuforge_entry_{i}(cuforge_cpu_launch* cuforge_launch, long long cuforge_first, long long "
            f"cuforge_last) {{ cuforge_cpu::run_range<{kernel}, "
            f"{'true' if plain else 'false'}>(cuforge_launch, cuforge_first, cuforge_last); }}"
        )
    tail.append("}\n")
    prefix = ("#define CUFORGE_CPU_PLAIN 1\n" if plain else "") + ("#define CUFORGE_CPU_CHECK 1\n" if checked else "")
    prefix += "#define CUFORGE_CPU_CHECK_INDEXED 1\n" if checked == "indexed" else ""
    prefix += HEADER + ('#include "cuforge/cpu_check.h"\n' if checked else "") + f'#line 1 "{program_file(label)}"\n'
    return prefix + body + "\n".join(tail)


def excerpt_lines(label: str, source: str, line_sources: Mapping[str, str],
                  entries: Sequence[tuple[str, int]]) -> dict[tuple[str, int], tuple[str, bool]]:  # fmt: skip
    """The text of each (file, line) the compiler's messages can name in the translation unit
    of ``source``, as the user wrote it, and whether the compiler saw that same text (not a
    rewritten ``__shared__`` declaration, whose columns are not the user's). A line that two
    ``#line`` regions give different texts is left out: no excerpt rather than a wrong one."""
    plain = _is_plain(source)
    user = _assemble(label, source, plain, entries)
    compiled = _assemble(label, _rewritten(label, source, line_sources), plain, entries).split("\n")
    found: dict[tuple[str, int], tuple[str, bool]] = {}
    ambiguous: set[tuple[str, int]] = set()
    file, line = "", 0
    directive = re.compile(r'#line (\d+) "([^"]+)"')
    for i, (text, blank) in enumerate(zip(user.split("\n"), masked(user).split("\n"))):
        m = directive.fullmatch(text)
        if m is not None and blank.startswith("#"):  # (not one inside a comment or a string)
            file, line = m.group(2), int(m.group(1))
            continue
        if file:
            if found.setdefault((file, line), (text, text == compiled[i]))[0] != text:
                ambiguous.add((file, line))
            line += 1
    for key in ambiguous:
        del found[key]
    return found
