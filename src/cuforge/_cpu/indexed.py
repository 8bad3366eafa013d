"""Kernels whose memory is reached only by indexing their array parameters (``y[i] = a * x[i] +
y[i]``: elementwise kernels, grid-stride loops), checked without ThreadSanitizer's calls.

A checked build (``check.py``) has the compiler call the checker before each memory access: a
call per access, per CUDA thread, whatever the checker then does. For such a kernel that is most
of its time, and most of its memory is reached as ``p[e]``. Here the source is read token by
token; where every access of the kernel is an index into an array parameter (no pointer made,
no shared memory, no local variable left unset, no call but the math library's), each
``p[e]`` becomes a call of ``cuforge/cpu_check.h``'s inline check (``check_ld``, or
``check_ref`` where it is written), the kernel is compiled without the instrumentation, and that
check does inline what the checker's common case does, calling the checker itself for the rest
(a bound passed, another thread's access before, a write held): the same rules, the same
reports, at the same lines. Any other kernel is built as before: the test errs towards the
instrumented build, whose only cost is time.
"""

from __future__ import annotations

import re

from .translate import _COMMENT_OR_STRING, masked

# The scalar types a parameter or a local variable may have (a pointer to one: an array).
_TYPES = frozenset(
    "float double int unsigned signed long short char bool size_t ptrdiff_t int8_t uint8_t int16_t uint16_t int32_t "
    "uint32_t int64_t uint64_t".split()
)
_QUALIFIERS = frozenset(("const", "__restrict__"))
# Words a body may hold besides its parameters and locals: statements, values, and the built-ins
# whose members x, y, z it reads.
_STATEMENTS = frozenset("if else for while do return break continue true false static_cast const".split())
_BUILTINS = frozenset(("threadIdx", "blockIdx", "blockDim", "gridDim"))
_VALUES = frozenset(("warpSize",))
# Functions of values only (CUDA's math library, as cuforge_cpu.h's math defines them): no memory.
_MATH = frozenset(
    "sqrtf sqrt rsqrtf rsqrt cbrtf cbrt expf exp exp2f exp2 exp10f exp10 expm1f expm1 logf log log2f log2 log10f "
    "log10 log1pf log1p powf pow sinf sin cosf cos tanf tan asinf asin acosf acos atanf atan atan2f atan2 sinhf sinh "
    "coshf cosh tanhf tanh asinhf asinh acoshf acosh atanhf atanh erff erf erfcf erfc fabsf fabs fmaxf fmax fminf "
    "fmin fmaf fma floorf floor ceilf ceil truncf trunc roundf round rintf rint nearbyintf nearbyint fmodf fmod "
    "remainderf remainder copysignf copysign hypotf hypot max min abs llabs labs __expf __logf __powf __sinf __cosf "
    "__tanf __fdividef __fmul_rn __fadd_rn __fsub_rn __fmaf_rn __dmul_rn __dadd_rn __saturatef isnan isinf isfinite "
    "signbit __float2int_rn __float2int_rz __int2float_rn __popc __popcll __clz __clzll __ffs __ffsll __brev "
    "__mul24 __umul24 __mulhi __umulhi __mul64hi __umul64hi".split()
)
_ASSIGN = frozenset("= += -= *= /= %= &= |= ^= <<= >>=".split())
_TOKEN = re.compile(
    r"\s+|(?P<num>\.?\d(?:[\w.]|[eEpP][+-])*)|(?P<word>[A-Za-z_]\w*)"
    r"|(?P<op><<=|>>=|->|\+\+|--|&&|\|\||==|!=|<=|>=|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<|>>|::|[-+*/%=<>!~&|^?:;,.()\[\]{}#])"
    r"|(?P<other>.)"
)
_LINE_DIRECTIVE = re.compile(r'^[ \t]*#[ \t]*line[ \t]+\d+[ \t]+"[^"\n]*"[ \t]*$', re.MULTILINE)
# The running thread's name in the rewritten kernel (a body that declares it too is refused by the compiler,
# and built instrumented).
THREAD = "cuforge_thread"
_FUNCTION = re.compile(r"\A\s*__global__\s+void\s+(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)\s*\{(?P<body>.*)\}\s*\Z",
                       re.DOTALL)  # fmt: skip


class _Refused(Exception):
    """The source is not such a kernel (not an error: it is built instrumented)."""


def rewrite(source: str) -> str | None:
    """``source`` (a rendered program) with each index into an array parameter made a checked
    access (``cuforge_cpu::check_ld<k>(cuforge_thread, x, i)``, ``check_ref`` where it is
    written, k the parameter's position), the kernel made inline and the running thread found at
    its start, every line where it was; None where the source is not one kernel whose memory is
    reached only so."""
    unlined = _LINE_DIRECTIVE.sub(lambda m: " " * len(m.group()), source)  # (same length: offsets hold)
    if any(m.group()[0] in "\"'" for m in _COMMENT_OR_STRING.finditer(unlined)):
        return None  # (a string or character literal)
    plain = masked(unlined)
    match = _FUNCTION.match(plain)
    if match is None:
        return None
    try:
        arrays, scalars = _params(match.group("params"))
        edits = _edits(plain, match.start("body"), match.end("body"), arrays, scalars)
    except _Refused:
        return None
    # The kernel inlined into the runtime's loop over its threads (what it finds of the launch there
    # found once), and the running thread taken once (cpu_check.h's indexed_thread), at its start:
    # the words added to the lines of its signature and its brace only.
    void = plain.index("void", match.start())
    edits.append((void, void, "__attribute__((always_inline)) inline "))
    edits.append((match.start("body"), match.start("body"), f" const cuforge_cpu::indexed_thread {THREAD};"))
    out, at = [], 0
    for start, end, text in sorted(edits):
        out.append(source[at:start])
        out.append(text)
        at = end
    out.append(source[at:])
    return "".join(out)


def _tokens(plain: str, start: int, end: int) -> list[tuple[str, str, int, int]]:
    """(kind, text, start, end) of each token of ``plain[start:end]``; a character no token
    takes refuses."""
    found = []
    for m in _TOKEN.finditer(plain, start, end):
        kind = m.lastgroup
        if kind is None:
            continue  # (white space)
        if kind == "other":
            raise _Refused
        found.append((kind, m.group(), m.start(), m.end()))
    return found


def _params(params: str) -> tuple[dict[str, int], set[str]]:
    """The array parameters (a pointer to a scalar) by name, with their positions, and the names
    of the others (a scalar); a parameter of another type refuses."""
    arrays: dict[str, int] = {}
    scalars: set[str] = set()
    if not params.strip() or params.strip() == "void":
        return arrays, scalars
    for k, param in enumerate(params.split(",")):
        words = [t for _, t, _, _ in _tokens(param, 0, len(param))]
        if len(words) < 2 or not re.fullmatch(r"[A-Za-z_]\w*", words[-1]) or words[-1] in _TYPES:
            raise _Refused
        stars = words.count("*")
        rest = [w for w in words[:-1] if w != "*"]
        if stars > 1 or not rest or any(w not in _TYPES and w not in _QUALIFIERS for w in rest):
            raise _Refused
        if stars:
            arrays[words[-1]] = k
        else:
            scalars.add(words[-1])
    return arrays, scalars


def _edits(plain: str, start: int, end: int, arrays: dict[str, int], scalars: set[str]) -> list[tuple[int, int, str]]:
    """The replacements that make each ``p[e]`` of the body a checked access; refuses a body
    that reaches memory another way."""
    tokens = _tokens(plain, start, end)
    names = set(arrays)
    locals_: set[str] = set()
    edits: list[tuple[int, int, str]] = []
    nesting: list[tuple[str, int]] = []  # each open '(' and '[' (every '[' an access's), with its token's index
    for i, (kind, text, s, e) in enumerate(tokens):
        prev = tokens[i - 1][1] if i else "{"
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind == "num":
            continue
        if kind == "word":
            if prev == "." and tokens[i - 2][1] in _BUILTINS and text in ("x", "y", "z"):
                continue
            if text in _TYPES or text == "const":
                if prev not in _TYPES and prev != "const":  # (a type's first word: it takes the others)
                    _type(tokens, i, prev, locals_, names | scalars)
                continue
            if text in names:
                if nxt != "[":
                    raise _Refused  # (the array used otherwise than by index: a pointer made)
                continue
            if text in scalars or text in locals_ or text in _STATEMENTS or text in _VALUES:
                continue
            if text in _BUILTINS and nxt == ".":
                continue
            if text in _MATH and nxt == "(":
                continue
            raise _Refused
        # operators
        if text in ("(", "["):
            if text == "[" and prev not in names:
                raise _Refused  # (a local array, a lambda, an attribute)
            nesting.append((text, i))
            continue
        if text in (")", "]"):
            if not nesting or nesting[-1][0] != ("(" if text == ")" else "["):
                raise _Refused
            o = nesting.pop()[1]
        elif text == "," and nesting and nesting[-1][0] == "[":
            raise _Refused  # (a comma expression as an index)
        if text == "]":
            name_token = tokens[o - 1]
            k = arrays[name_token[1]]
            written = nxt in _ASSIGN or nxt in ("++", "--") or (o >= 2 and tokens[o - 2][1] in ("++", "--"))
            call = f"cuforge_cpu::check_{'ref' if written else 'ld'}<{k}>({THREAD}, {name_token[1]}, "
            edits.append((name_token[2], tokens[o][3], call))
            edits.append((s, e, ")"))
            continue
        if text in ("&", "*"):
            if prev in _TYPES or prev in _QUALIFIERS:
                raise _Refused  # (a pointer or a reference declared, or cast to)
            if not ((tokens[i - 1][0] in ("num", "word") and prev not in _STATEMENTS) or prev in (")", "]")):
                raise _Refused  # (unary: an address taken, a pointer read)
            continue
        if text in ("->", "::", "#", "{") and not (text == "{" and prev in (")", ";", "{", "}", "else", "do")):
            raise _Refused
        if text == "." and prev not in _BUILTINS:
            raise _Refused
        if (text == ")" and (nxt in _ASSIGN or nxt in ("++", "--"))) or (text in ("++", "--") and nxt == "("):
            raise _Refused  # (a parenthesized place written: a conditional's array element, (y[i])++)
    if nesting:
        raise _Refused
    return edits


def _type(tokens: list[tuple[str, str, int, int]], i: int, prev: str, locals_: set[str], taken: set[str]) -> None:
    """A type's words from token ``i``: a cast (``(float)``, ``static_cast<float>``, ``float(x)``
    in an expression) or a declaration (``_declaration``); refuses a pointer or a reference, and
    a type in parentheses at a statement's start (``float (v);`` declares v)."""
    j = i
    while j < len(tokens) and (tokens[j][1] in _TYPES or tokens[j][1] in _QUALIFIERS):
        j += 1
    after = tokens[j][1] if j < len(tokens) else ""
    if after in ("*", "&") or not any(tokens[k][1] in _TYPES for k in range(i, j)):
        raise _Refused
    if after in (")", ">"):
        return
    if after == "(":
        if prev in (";", "{", "}", ")", "else", "do"):
            raise _Refused
        return
    _declaration(tokens, j, locals_, taken)


def _declaration(tokens: list[tuple[str, str, int, int]], i: int, locals_: set[str], taken: set[str]) -> None:
    """The declaration whose name is token ``i``: one name, with an initializer, no array, no
    function; refuses another (a local left unset is followed only by the instrumented build)."""
    if i >= len(tokens) or tokens[i][0] != "word" or tokens[i][1] in taken or tokens[i][1] in _STATEMENTS:
        raise _Refused
    if i + 1 >= len(tokens) or tokens[i + 1][1] != "=":
        raise _Refused
    depth = 0
    for _, text, _, _ in tokens[i + 2 :]:
        if text in ("(", "["):
            depth += 1
        elif text in (")", "]"):
            depth -= 1
        elif text == "{" and depth == 0:
            raise _Refused  # (a braced initializer)
        elif text == "," and depth == 0:
            raise _Refused  # (more than one name declared)
        elif text == tokens[i][1]:
            raise _Refused  # (its own initializer reads it: unset)
        elif text == ";" and depth == 0:
            break
    locals_.add(tokens[i][1])
