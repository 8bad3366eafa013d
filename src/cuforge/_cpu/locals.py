"""The checked build's local variables: each declared without an initializer in a function's
block (``float acc;``, ``int h[4];``) gets a guard after its declaration, on its line
(``CF_LOCAL(acc);``, ``cuforge/cpu_check.h``), which tells the checker where its bytes are
while its scope lasts. The checker reports a read of them before a write, as a GPU leaves them
undefined.

A variable is left unfollowed where the checker could not see every write to it:

- its address is taken (``&v``: a function of the C library or of cuforge's own runtime may
  write it, uninstrumented), or an array of it is used other than by subscript (passed to
  ``memcpy``, cast to a ``float4*``), unless each such use is a whole argument of a call to a
  function the source defines (a ``__device__`` helper that fills it: the checker sees its
  writes) or to a CUB collective's method (``BlockLoad(...).Load(p, items, valid)``), in a
  source that calls none of the C library's functions that write through a pointer;
- it is passed to a shuffle (``__shfl_sync``, ``g.shfl``): the lanes that do not supply the value
  pass theirs undefined, as the warp-aggregated atomic does (``if (lane == 0) base = ...;
  base = __shfl_sync(mask, base, 0);``);
- it is declared in a ``switch`` (a ``case`` label may jump past the guard, which C++ refuses),
  or the source has a ``goto``;
- its type is not a number or a vector type without padding (``cuforge/cpu_check.h`` decides).
"""

from __future__ import annotations

import re

_KEYWORDS = frozenset(
    "return goto delete throw typedef using namespace break continue case default else do co_return co_yield friend "
    "static extern volatile const constexpr register thread_local struct class union enum template typename auto "
    "inline virtual explicit public private protected operator sizeof new if while for switch asm __asm__ "
    "__shared__ __constant__ __device__ __global__ __host__ __managed__ __restrict__ alignas static_assert".split()
)
# A declaration without an initializer: a type of words ("unsigned long long", "float4",
# "cuda::std::size_t"), then names, each perhaps with array extents, then ";".
_EXTENT = r"(?:\[[^\[\]{};()=]*\]\s*)*"
_DECLARATION = re.compile(
    rf"(?P<type>(?:(?:unsigned|signed|short|long)\s+)*[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s+"
    rf"(?P<names>[A-Za-z_]\w*\s*{_EXTENT}(?:,\s*[A-Za-z_]\w*\s*{_EXTENT})*);"
)
_NAME = re.compile(rf"([A-Za-z_]\w*)\s*({_EXTENT})")
_DIRECTIVE_OR_SPACE = re.compile(r"(?:\s+|#[^\n]*)*")
_CONTROL = re.compile(r"\b(?:else|do|try)\s*\Z")
_AFTER_PARENS = re.compile(r"\)\s*(?:(?:const|noexcept|override|mutable|volatile|&&?)\s*)*(?:->[^;{}]*)?\Z")
_SHUFFLE = re.compile(r"\b\w*shfl\w*\s*(?:<[^;{}()]*>\s*)?\(")  # (__shfl_sync, __shfl_down_sync, g.shfl, tile.shfl_xor<T>)
_TEMPLATE_HEAD = re.compile(r"\btemplate\s*<[^;{}]*?>\s*")
# What writes through a pointer without the checker seeing it: the C library's code, or what
# lowers to it (std::copy and std::fill of trivial types are __builtin_memmove and memset). The
# checked build's own memset, memcpy and memmove tell the checker what they write (cpu_check.h).
_UNSEEN_WRITERS = re.compile(
    r"\b(?:__builtin_mem\w+|str\w*cpy|s?n?printf|sincos(?:f|l)?|frexp\w*|modf\w*|remquo\w*|"
    r"lgamma\w*_r|std\s*::\s*(?:copy\w*|fill\w*|move|move_backward|uninitialized_\w+))\s*\("
)
# The C library's functions whose writes the checked build sees (cpu_check.h defines them).
_SEEN_LIBRARY = frozenset(("memset", "memcpy", "memmove"))
# A CUB collective's method, whose (instrumented) header code writes an array it is given.
_CUB_METHODS = frozenset(
    "Load Store Reduce Sum InclusiveSum ExclusiveSum InclusiveScan ExclusiveScan HeadFlags TailFlags".split()
)


def follow_locals(source: str, plain: str) -> str:
    """``source`` (``plain``: it masked, same length) with a guard after each declaration of a
    local variable without an initializer that the checker can follow; lines are kept."""
    if re.search(r"\bgoto\b", plain):
        return source
    edits: list[tuple[int, str]] = []
    shuffled = " ".join(_arguments(plain, m.end()) for m in _SHUFFLE.finditer(plain))
    seen = None if _UNSEEN_WRITERS.search(plain) else _defined_functions(plain)
    for at in _statement_starts(plain):
        start = _DIRECTIVE_OR_SPACE.match(plain, at).end()  # type: ignore[union-attr]
        m = _DECLARATION.match(plain, start)
        if m is None or m.group("type").split()[0].split(":")[0] in _KEYWORDS:
            continue
        names = [d for d in _NAME.finditer(m.group("names")) if d.group(1) not in _KEYWORDS]
        guards = [f"CF_LOCAL({d.group(1)});" for d in names
                  if _followable(plain, d.group(1), bool(d.group(2).strip()), m, shuffled, seen)]  # fmt: skip
        if guards:
            edits.append((m.end(), " " + " ".join(guards)))
    for end, text in reversed(edits):
        source = source[:end] + text + source[end:]
    return source


def _followable(plain: str, name: str, array: bool, declaration: re.Match[str], shuffled: str,
                seen: frozenset[str] | None = None) -> bool:  # fmt: skip
    """Whether every write to ``name`` is one the checker sees and every read a use: its address
    is never taken (and an array's name is never used but by subscript) but as a whole argument
    of a call to a function in ``seen`` (the source's own, None: none counts) or to a CUB
    collective's method, and it is not in ``shuffled`` (the arguments of the source's shuffles)."""
    if re.search(rf"(?<![\w.>]){name}\b", shuffled):
        return False
    scope = re.compile(rf"(?<![\w.>]){name}\b")
    for use in scope.finditer(plain, declaration.end(), _scope_end(plain, declaration.start())):  # (its scope's uses)
        before = plain[: use.start()].rstrip()
        if before.endswith("&") and not before.endswith("&&") and not re.search(r"[\w)\]]\s*&\Z", before):
            if not _argument_of_seen(plain, len(before) - 1, use.end(), seen):  # (from the `&`)
                return False  # (&name: unary)
        elif array and not plain.startswith("[", _DIRECTIVE_OR_SPACE.match(plain, use.end()).end()):  # type: ignore[union-attr]
            if not _argument_of_seen(plain, use.start(), use.end(), seen):
                return False
    return True


def _scope_end(plain: str, at: int) -> int:
    """Where the block that holds ``at`` ends (its closing brace; the text's end if none)."""
    depth = 0
    for m in re.finditer(r"[{}]", plain[at:]):
        if m.group() == "{":
            depth += 1
        elif depth == 0:
            return at + m.start()
        else:
            depth -= 1
    return len(plain)


def _defined_functions(plain: str) -> frozenset[str]:
    """The names of the functions (and lambdas named by a variable) the source defines, with a body."""
    names = {m.group(1) for m in re.finditer(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>\s*)?\([^;{}]*\)\s*"
                                            r"(?:(?:const|noexcept|mutable|override|->[^;{}]*)\s*)*\{", plain)}  # fmt: skip
    names |= {m.group(1) for m in re.finditer(r"\b([A-Za-z_]\w*)\s*=\s*\[[^\]]*\]\s*\(", plain)}
    return frozenset(names - _KEYWORDS)


def _argument_of_seen(plain: str, start: int, end: int, seen: frozenset[str] | None) -> bool:
    """Whether ``plain[start:end]`` is a whole argument of a call to a function in ``seen`` or to a
    CUB collective's method (``seen`` None: never)."""
    if seen is None:
        return False
    before, after = plain[:start].rstrip(), plain[end:].lstrip()
    if not before.endswith(("(", ",")) or not after.startswith((",", ")")):
        return False
    depth, i = 0, len(before) - 1
    while i >= 0:  # (the call's opening parenthesis)
        ch = before[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                break
            depth -= 1
        elif ch == ";" and depth == 0:
            return False
        i -= 1
    if i < 0 or before[i] != "(":
        return False
    callee = re.search(r"(\.|->|::)?\s*([A-Za-z_]\w*)\s*(?:<[^;{}()]*>\s*)?\Z", before[:i])
    if callee is None:
        return False
    if callee.group(1) in (".", "->") and callee.group(2) in _CUB_METHODS:
        return True
    return callee.group(1) != "::" and callee.group(2) in seen | _SEEN_LIBRARY


def _arguments(plain: str, start: int) -> str:
    """The text of a call's arguments, from just after its ``(`` to the ``)`` that closes it."""
    depth = 1
    for i in range(start, len(plain)):
        depth += {"(": 1, ")": -1}.get(plain[i], 0)
        if depth == 0:
            return plain[start:i]
    return plain[start:]


def _statement_starts(plain: str) -> list[int]:
    """Where a statement may begin directly in a function's block (not a switch's, nor one
    inside a switch): after each ``;``, ``{`` and ``}`` outside parentheses."""
    starts: list[int] = []
    scopes: list[tuple[str, int]] = []  # (kind, the parenthesis depth outside it)
    depth, head = 0, 0
    for m in re.finditer(r"[{}();]", plain):
        ch = m.group()
        if ch == "(":
            depth += 1
            continue
        if ch == ")":
            depth = max(depth - 1, 0)
            continue
        if ch == ";" and depth:
            continue  # (a for statement's header)
        if ch == "{":
            kind = _kind(plain[head : m.start()], scopes[-1][0] if scopes else "namespace")
            scopes.append((kind, depth))
            depth = 0
        elif ch == "}":
            depth = scopes.pop()[1] if scopes else 0
        head = m.end()
        if depth == 0 and scopes and scopes[-1][0] == "block" and all(k != "switch" for k, _ in scopes):
            starts.append(m.end())
    return starts


def _kind(head: str, outer: str) -> str:
    """What the brace after ``head`` (the text since the last ``;``, ``{`` or ``}``) opens: a
    function's or a statement's "block", a "switch", a "class", an initializer ("init"), or a
    "namespace"."""
    h = _TEMPLATE_HEAD.sub(" ", head).strip()
    if outer == "init":
        return "init"
    if not h:
        return "block" if outer in ("block", "switch") else outer
    if re.search(r"\bnamespace\b", h) or re.search(r"\bextern\s*\Z", h):
        return "namespace"
    if _CONTROL.search(h):
        return "block"
    if _AFTER_PARENS.search(h):
        opened = _opening_paren(h, _AFTER_PARENS.search(h).start())  # type: ignore[union-attr]
        word = re.search(r"(\w+)\s*\Z", h[:opened])
        if word and word.group(1) == "switch":
            return "switch"
        if word and word.group(1) in ("__align__", "alignas", "__attribute__", "__declspec"):
            return "class" if re.search(r"\b(?:struct|class|union)\b", h) else "other"
        return "block"
    if re.search(r"\b(?:struct|class|union|enum)\b", h):
        return "class"
    return "init"


def _opening_paren(text: str, closing: int) -> int:
    """The index of the ``(`` that the ``)`` at ``closing`` closes (0 where none does)."""
    depth = 0
    for i in range(closing, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return 0
