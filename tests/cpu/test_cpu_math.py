"""cuforge/cpu_math.h, the CUDA math API, intrinsics and atomics for the CPU backend: one C++
program (cpu_math_program.cpp) compiled with the system compiler against the header and run;
every result it prints is checked against NumPy or an exact value computed here from the
inputs the program prints beside it."""

from __future__ import annotations

import decimal
import math
import os
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from cuforge._compile.headers import cccl_include_dir, cuda_include_dir

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).with_name("cpu_math_program.cpp")
INCLUDE = ROOT / "src" / "cuforge" / "_cpu" / "include"
CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")

pytestmark = pytest.mark.skipif(CXX is None or shutil.which(CXX) is None, reason="no C++ compiler ($CXX, g++ or clang++) found")


class Bits16(NamedTuple):
    """A __half ('h') or __nv_bfloat16 ('b') result, as its bits."""

    kind: str
    bits: int

    @property
    def value(self) -> float:
        if self.kind == "h":
            return float(np.array([self.bits], dtype=np.uint16).view(np.float16)[0])
        return float(np.array([self.bits << 16], dtype=np.uint32).view(np.float32)[0])


def _token(t: str) -> int | float | Bits16:
    if t[0] in "hb":
        return Bits16(t[0], int(t[1:]))
    if "p" in t or "n" in t:  # hex floats, inf, nan
        return float.fromhex(t)
    return int(t)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[list]]:
    """The program's lines by key. Built with FMA instructions where the CPU has them, so that
    the _rn intrinsics' guard against contraction is really exercised."""
    cuda = cuda_include_dir()
    if cuda is None:
        pytest.skip("the CUDA runtime headers (nvidia-cuda-runtime wheel) are not installed")
    exe = tmp_path_factory.mktemp("cpu_math") / "prog"
    flags = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"]
    cpuinfo = Path("/proc/cpuinfo")
    if sys.platform == "linux" and cpuinfo.exists() and " fma " in cpuinfo.read_text():
        flags.append("-mfma")
    cccl = cccl_include_dir()  # (cuda_fp16.h includes <nv/target>, which is CCCL's)
    cmd = [str(CXX), *flags, f"-I{INCLUDE}", f"-I{cuda}", *([f"-I{cccl}"] if cccl else []), str(PROGRAM), "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    lines: dict[str, list[list]] = {}
    for row in ran.stdout.splitlines():
        key, *tokens = row.split()
        lines.setdefault(key, []).append([_token(t) for t in tokens])
    return lines


# ---------------------------------------------------------------- exact references
class Format(NamedTuple):
    precision: int  # significant bits
    min_lsb: int  # exponent of the smallest subnormal
    max_exp: int  # the largest finite value is (2 - 2^(1-precision)) * 2^max_exp


F32 = Format(24, -149, 127)
F64 = Format(53, -1074, 1023)
F16 = Format(11, -24, 15)
BF16 = Format(8, -133, 127)


def rounded(x: Fraction | int | float, fmt: Format, mode: str = "rn") -> float:
    """The exact value ``x`` rounded to ``fmt`` in ``mode`` (rn, rz, ru, rd), as the Python float
    of that value (which holds every value of these formats exactly)."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    x = Fraction(x)
    if x == 0:
        return 0.0
    sign = -1 if x < 0 else 1
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    lsb = max(e - (fmt.precision - 1), fmt.min_lsb)
    scaled = a / Fraction(2) ** lsb
    q, r = divmod(scaled.numerator, scaled.denominator)
    rem = Fraction(r, scaled.denominator)
    away = (mode == "ru" and sign > 0) or (mode == "rd" and sign < 0)
    if (mode == "rn" and (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and q % 2))) or (away and rem):
        q += 1
    value = Fraction(q) * Fraction(2) ** lsb
    largest = (2 - Fraction(2) ** (1 - fmt.precision)) * Fraction(2) ** fmt.max_exp
    if value > largest:
        value = largest if mode == "rz" or (mode != "rn" and not away) else None
    return sign * math.inf if value is None else sign * float(value)


def to_int(x: float, bits: int, signed: bool, mode: str) -> int:
    """The GPU's float-to-integer conversion: rounded in ``mode``, saturated; NaN is 0 for 32-bit
    results and 0x8000000000000000 for 64-bit ones."""
    if math.isnan(x):
        return (-(1 << 63) if signed else 1 << 63) if bits == 64 else 0
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if math.isinf(x):
        return hi if x > 0 else lo
    r = {"rn": round, "rz": math.trunc, "ru": math.ceil, "rd": math.floor}[mode](x)
    return min(max(r, lo), hi)


def same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or got == want


def ulps32(got: float, want: float) -> int:
    if math.isnan(got) or math.isnan(want):
        return 0 if math.isnan(got) and math.isnan(want) else 1 << 30
    g, w = (int(np.array([v], dtype=np.float32).view(np.int32)[0]) for v in (got, want))
    g, w = (v if v >= 0 else -(v & 0x7FFFFFFF) for v in (g, w))
    return abs(g - w)


def f32(x: float) -> float:
    with np.errstate(all="ignore"):
        return float(np.float32(x))


# ---------------------------------------------------------------- float math
def _libm(fn):
    def ref(x: float) -> float:
        try:
            return f32(fn(x))
        except (ValueError, OverflowError):
            return math.nan

    return ref


def _c_round(x: float) -> float:
    return x if not math.isfinite(x) else math.copysign(math.floor(abs(x) + 0.5), x)


UNARY = [  # name, float64 reference, allowed ulps (0: exact)
    ("expf", np.exp, 1), ("logf", np.log, 1), ("sinf", np.sin, 1), ("cosf", np.cos, 1), ("tanf", np.tan, 1),
    ("sqrtf", np.sqrt, 0), ("fabsf", np.fabs, 0), ("floorf", np.floor, 0), ("ceilf", np.ceil, 0), ("roundf", _c_round, 0),
    ("truncf", np.trunc, 0), ("exp2f", np.exp2, 1), ("log2f", np.log2, 1), ("log10f", np.log10, 1), ("expm1f", np.expm1, 1),
    ("log1pf", np.log1p, 1), ("sinhf", np.sinh, 1), ("coshf", np.cosh, 1), ("tanhf", np.tanh, 1), ("asinf", np.arcsin, 1),
    ("acosf", np.arccos, 1), ("atanf", np.arctan, 1), ("cbrtf", np.cbrt, 1), ("erff", _libm(math.erf), 1),
    ("erfcf", _libm(math.erfc), 1), ("lgammaf", _libm(math.lgamma), 2), ("tgammaf", _libm(math.gamma), 2),
    ("nearbyintf", np.rint, 0), ("rintf", np.rint, 0),
]  # fmt: skip


def test_float_math_matches_numpy(out):
    checked = 0
    for x, *got in out["f1"]:
        for (name, fn, tol), g in zip(UNARY, got, strict=True):
            with np.errstate(all="ignore"):
                want = f32(fn(np.float64(x)))
            if name in ("lgammaf", "tgammaf") and (x == 0 or math.isinf(x) or math.isnan(want)):
                continue  # poles and Python's ValueError: C's answers differ in sign conventions
            assert ulps32(g, want) <= tol, f"{name}({x!r}) = {g!r}, want {want!r}"
            checked += 1
    assert checked > 450


def test_float_overloads_are_the_float_functions(out):
    for x, e, lg, s, sq, fa, fl, th, ab in out["f1o"]:
        row = next(r for r in out["f1"] if same(r[0], x))
        assert [e, lg, s, sq, fa, fl, th] == pytest.approx([row[1], row[2], row[3], row[6], row[7], row[8], row[19]], nan_ok=True)
        assert same(ab, abs(x))


def test_classification(out):
    for x, *flags in out["cls"]:
        want = [math.isnan(x), math.isinf(x), math.isfinite(x), math.copysign(1, x) < 0]
        assert flags == [int(v) for v in want * 2], x


def test_binary_float_math(out):
    for a, b, pw, mn, mx, fm, at, hy, cs, rem, fd, cmin, cmax, pw2 in out["f2"]:
        with np.errstate(all="ignore"):
            assert ulps32(pw, f32(np.power(np.float64(a), b))) <= 1 and same(pw2, pw)
            assert same(mn, f32(np.fmin(a, b))) and same(mx, f32(np.fmax(a, b))) and same(cmin, mn) and same(cmax, mx)
            assert same(fm, f32(np.fmod(a, b))) and same(rem, f32(np.remainder(a, b)) if math.isnan(fm) else rem)
            assert ulps32(at, f32(np.arctan2(a, b))) <= 1 and ulps32(hy, f32(np.hypot(a, b))) <= 1
            assert same(cs, math.copysign(a, b)) or math.isnan(a)
            assert same(fd, a - b if a > b else (0.0 if a <= b else math.nan))
        if math.isfinite(a) and math.isfinite(b) and b != 0:
            assert rem == f32(a - b * round(Fraction(a) / Fraction(b)))


def test_rounding_intrinsics_are_one_ieee_operation(out):
    for a, b, add, sub, mul, div, fdivf, fdiv2, pw, rh, dadd, dmul, dsub, ddiv in out["rn"]:
        fa, fb = np.float32(a), np.float32(b)
        with np.errstate(all="ignore"):
            assert [add, sub, mul, div] == pytest.approx(
                [float(fa + fb), float(fa - fb), float(fa * fb), float(fa / fb)], nan_ok=True, rel=0, abs=0
            )
            assert same(fdivf, div) and same(fdiv2, div)
            assert [dadd, dmul, dsub, ddiv] == pytest.approx([a + b, a * b, a - b, np.float64(a) / b], nan_ok=True, rel=0, abs=0)
            assert same(rh, f32(1 / np.hypot(np.float64(a), b)))
            assert same(pw, f32(np.power(np.float64(a), b))) or ulps32(pw, f32(np.power(np.float64(a), b))) <= 1


def test_fma_fused_and_rn_unfused(out):
    ((a, c, fused, fused2, unfused, dfused, dfused2),) = out["fma"]
    assert a == 1 + 2**-12 and c == 1 + 2**-11
    assert fused == fused2 == 2.0**-24  # a*a = 1 + 2^-11 + 2^-24 exactly
    assert unfused == 0.0  # a*a rounds to 1 + 2^-11 first
    assert dfused == dfused2 == 2.0**-24


def _rsqrt(x: float) -> float:
    """1/sqrt(x) correctly rounded to double."""
    if not x > 0 or math.isinf(x):
        return float(1 / np.sqrt(np.float64(x)))
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return float(1 / decimal.Decimal(x).sqrt())


def test_cuda_only_float_functions(out):
    for x, rs, rsd, rc, e10, sat, sat2, rcp, sq, frs, drcp, dsq in out["cu1"]:
        with np.errstate(all="ignore"):
            d = np.float64(x)
            assert same(rs, f32(1 / np.sqrt(d))) and same(frs, rs) and same(rsd, _rsqrt(x))
            assert same(rc, f32(1 / np.cbrt(d)))
            assert ulps32(e10, f32(np.power(10.0, d))) <= 1
            assert sat == sat2 == (0.0 if not x > 0 else min(x, 1.0))
            assert same(rcp, f32(1 / d)) and same(sq, f32(np.sqrt(d)))
            assert same(drcp, float(1 / d)) and same(dsq, float(np.sqrt(d)))
    assert [r[1:3] for r in out["cu1"] if r[0] == 0.0] == [[math.inf, math.inf], [-math.inf, -math.inf]]
    for x, *fast in out["fast"]:
        row = next(r for r in out["f1"] if same(r[0], x))
        cu = next(r for r in out["cu1"] if same(r[0], x))
        assert all(same(g, w) for g, w in zip(fast, [row[1], row[2], row[3], row[4], row[5], cu[4], row[13], row[14]]))


def test_sincos_and_pi_forms(out):
    for x, s, c, sp, cp, sp2, cp2, s2, c2 in out["sc"]:
        with np.errstate(all="ignore"):
            assert same(s, f32(np.sin(np.float64(x)))) or ulps32(s, f32(np.sin(np.float64(x)))) <= 1
            assert same(s2, s) and same(c2, c) and same(sp2, sp) and same(cp2, cp)
            if math.isfinite(x) and x == math.floor(x):
                assert sp == 0.0 and math.copysign(1, sp) == math.copysign(1, x) and cp == (-1.0) ** (int(x) % 2)
            elif math.isfinite(x) and 2 * x == math.floor(2 * x):  # half an odd integer: exact
                assert cp == 0.0 and sp == (-1.0) ** math.floor(x)
            elif math.isfinite(x):
                assert ulps32(sp, f32(math.sin(math.pi * x))) <= 2 and ulps32(cp, f32(math.cos(math.pi * x))) <= 2
            else:
                assert math.isnan(sp) and math.isnan(cp)
    want = {0.25: (2**-0.5, 2**-0.5), 0.5: (1, 0), 1.0: (0, -1), 1.5: (-1, 0), 2.0: (0, 1), -0.5: (-1, 0), -1.0: (0, -1),
            -2.5: (-1, 0), 1e20: (0, 1), 0.125: (math.sin(math.pi / 8), math.cos(math.pi / 8)), 0.0: (0, 1)}  # fmt: skip
    for d, s, c, s2, c2, e10 in out["pi"]:
        assert (s, c) == pytest.approx(want[d], rel=1.2e-16, abs=0) and (s2, c2) == (s, c)
        assert e10 == pytest.approx(math.inf if d > 308 else 10.0**d, rel=1e-15)
    assert [r[1] for r in out["pi"] if r[0] == 0.5] == [1.0]  # exactly
    assert [math.copysign(1, r[1]) for r in out["pi"] if r[0] == 0] == [1.0, -1.0]  # sinpi(+-0) is +-0


def test_norms(out):
    ((n3, rn3, n4, rn4, nf, rnf, n3d, rn3d, rh),) = out["norm"]
    assert (n3, n4, nf, n3d) == (13.0, 85.0, 85.0, 13.0)
    assert (rn3, rn4, rnf, rn3d, rh) == (f32(1 / 13), f32(1 / 85), f32(1 / 85), 1 / 13, 0.2)


def test_frexp_modf_ldexp_lrint(out):
    for x, m, e, fr, ip, l3, lm130 in out["fx"]:
        if math.isfinite(x):
            wm, we = math.frexp(x)
            assert (m, e) == (wm, we) and (fr, ip) == (math.modf(x)[0], math.modf(x)[1])
            assert l3 == f32(x * 8) and lm130 == rounded(Fraction(x) / 2**130, F32)
    for x, i, ll in out["lr"]:
        assert i == ll == round(x)


# ---------------------------------------------------------------- min and max
def test_min_max_follow_cuda_overloads(out):
    ((*got,),) = out["mm"]
    want = [1, 4294967295, 1, -5, 3, 1, 2**64 - 1, -(2**31), 1.0, 1.0, 1.0, 0.25, 3, 4, -3, 4, 3, 2**64 - 1, 7, 3, 2.5]
    assert got == want


# ---------------------------------------------------------------- integer intrinsics
def _brev(v: int, bits: int) -> int:
    return int(format(v, f"0{bits}b")[::-1], 2)


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def test_bit_counts_and_reversal(out):
    for u, popc, clz, ffs, brev, pun1, pun2 in out["i32"]:
        assert popc == bin(u).count("1") and clz == 32 - u.bit_length()
        assert ffs == ((u & -u).bit_length()) and brev == _brev(u, 32)
        assert pun1 == _signed(u, 32) and pun2 == u  # NaN bit patterns too
    for w, popc, clz, ffs, brev, pun in out["i64"]:
        assert (popc, clz, ffs, brev, pun) == (bin(w).count("1"), 64 - w.bit_length(), (w & -w).bit_length(), _brev(w, 64), w)


def _byte_perm(x: int, y: int, s: int) -> int:
    v, r = (y << 32) | x, 0
    for n in range(4):
        sel = (s >> (4 * n)) & 0xF
        b = (v >> (8 * (sel & 7))) & 0xFF
        if sel & 8:  # PTX prmt: the selected byte's sign bit, replicated
            b = 0xFF if b & 0x80 else 0
        r |= b << (8 * n)
    return r


def test_byte_perm(out):
    assert len(out["perm"]) == 11
    for x, y, s, got in out["perm"]:
        assert got == _byte_perm(x, y, s), hex(s)
    assert [r[3] for r in out["perm"][:4]] == [0x33221100, 0x77665544, 0x00112233, 0x44556677]


def test_funnel_shifts(out):
    for lo, hi, s, fl, flc, fr, frc in out["fsh"]:
        v = (hi << 32) | lo
        assert fl == ((v << (s & 31)) >> 32) & 0xFFFFFFFF
        assert flc == ((v << min(s, 32)) >> 32) & 0xFFFFFFFF
        assert fr == (v >> (s & 31)) & 0xFFFFFFFF
        assert frc == (v >> min(s, 32)) & 0xFFFFFFFF
    assert [r[4] for r in out["fsh"] if r[2] == 40] == [0x89ABCDEF]  # _lc clamps 40 to 32: lo


def test_multiplies_sums_averages(out):
    for x, y, mulhi, umulhi, mul24, umul24, sad, usad, hadd, rhadd, uhadd, urhadd in out["imul"]:
        ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
        assert mulhi == _signed((x * y) >> 32, 32) and umulhi == (ux * uy) >> 32
        assert mul24 == _signed(_signed(x, 24) * _signed(y, 24), 32)
        assert umul24 == ((ux & 0xFFFFFF) * (uy & 0xFFFFFF)) & 0xFFFFFFFF
        assert sad == (abs(x - y) + 1) & 0xFFFFFFFF and usad == (abs(ux - uy) + 1) & 0xFFFFFFFF
        assert (hadd, rhadd, uhadd, urhadd) == ((x + y) >> 1, (x + y + 1) >> 1, (ux + uy) >> 1, (ux + uy + 1) >> 1)
    for a, b, hi, uhi in out["i128"]:
        assert hi == (a * b) >> 64 and uhi == ((a % 2**64) * (b % 2**64)) >> 64


def test_punning_and_plain_loads(out):
    ((one, hi, lo, hi2, lo2, d1, d2),) = out["dpun"]
    assert one == 1.0
    assert (hi, lo, hi2 & 0xFFFFFFFF, lo2 & 0xFFFFFFFF) == (0x3FF00000, 0, 0xBFB99999, 0x9999999A)
    assert (d1, d2) == (1.0, -0.1)
    assert out["ld"] == [[11, 12, 13, 11, 12, 13, 3.5]]


# ---------------------------------------------------------------- conversions
MODES = ("rn", "rz", "ru", "rd")


def test_float_and_double_to_integers(out):
    for key, (b1, b2) in {"f2i": (32, 32), "d2i": (32, 32), "f2l": (64, 64), "d2l": (64, 64)}.items():
        assert len(out[key]) == 27
        for x, *got in out[key]:
            want = [to_int(x, b1, True, m) for m in MODES] + [to_int(x, b2, False, m) for m in MODES]
            assert got == want, (key, x)


def test_integers_and_doubles_to_floats(out):
    for key, fmt_list in {"l2f": (F32, F64), "u2f": (F32, F64)}.items():
        for n, *got in out[key]:
            want = [rounded(n, f, m) for f in fmt_list for m in MODES]
            assert got == want, (key, n)
    for n, *got in out["i2f"] + out["ui2f"]:
        assert got == [rounded(n, F32, m) for m in MODES] + [float(n)], n
    for d, *got in out["d2f"]:
        assert all(same(g, rounded(d, F32, m)) for g, m in zip(got, MODES, strict=True)), d
    assert [r[1:] for r in out["d2f"] if r[0] == 1e300] == [[math.inf, 3.4028234663852886e38, math.inf, 3.4028234663852886e38]]


# ---------------------------------------------------------------- half and bfloat16
def _bf16(x: float) -> float:
    """float32 rounded to bfloat16 to nearest even on its top 16 bits, as NumPy computes it."""
    u = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    if math.isnan(x):
        return math.nan
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return float(np.array([u], dtype=np.uint32).view(np.float32)[0])


def test_half_and_bfloat16_conversions(out):
    for x, h, b, hf, bf, *ints in out["hcv"]:
        with np.errstate(all="ignore"):
            assert same(h.value, float(np.float16(x))) and same(hf, h.value)
        assert same(b.value, _bf16(x)) and same(bf, b.value)
        hv, bv = h.value, b.value
        want = [
            to_int(hv, 32, True, "rn"), to_int(hv, 32, True, "ru"), to_int(hv, 32, True, "rd"), to_int(hv, 32, False, "rn"),
            to_int(hv, 16, True, "rn"), to_int(hv, 16, True, "ru"), to_int(hv, 16, False, "rd"), to_int(hv, 64, True, "rn"),
            to_int(hv, 64, False, "ru"), to_int(bv, 32, True, "rn"), to_int(bv, 32, True, "ru"), to_int(bv, 16, True, "rd"),
            to_int(bv, 64, True, "rn"), to_int(bv, 64, False, "rd"), to_int(bv, 16, False, "rn"), to_int(bv, 32, False, "ru"),
        ]  # fmt: skip
        assert ints == want, x


def test_half_arithmetic_matches_numpy(out):
    for h, g, *res in out["harith"]:
        a, b = np.float16(h.value), np.float16(g.value)
        with np.errstate(all="ignore"):
            want = [a + b, a - b, a * b, a / b, a + b, a * b]
        assert all(same(r.value, float(w)) for r, w in zip(res[:6], want)), (h, g)
        assert res[6] == int(h.value < g.value) and same(res[7].value, float(np.fmax(h.value, g.value)))
    for h, g, *res in out["barith"]:
        if math.isfinite(h.value) and g.value != 0:
            a, b = Fraction(h.value), Fraction(g.value)
            want = [rounded(v, BF16) for v in (a + b, a - b, a * b, a / b, a + b, a * b)]
            assert [r.value for r in res[:6]] == want, (h, g)
        assert res[6] == int(h.value < g.value)


def test_hfma_rounds_once(out):
    for fmt, key in ((F16, "hfma"), (BF16, "bfma")):
        for a, b, c, fma, sat, relu, *lanes in out[key]:
            if any(math.isnan(v.value) for v in (a, b, c)):
                assert math.isnan(fma.value)
                continue
            want = rounded(Fraction(a.value) * Fraction(b.value) + Fraction(c.value), fmt)
            assert fma.value == want, (key, a, b, c)
            assert sat.value == min(max(want, 0.0), 1.0) and relu.value == max(want, 0.0)
            if lanes:
                assert lanes[0].value == want and lanes[1].value == rounded(
                    Fraction(b.value) * Fraction(a.value) + Fraction(c.value), fmt
                )
    # products exactly halfway between two 16-bit values: the tiny addend decides
    assert [r[3].value for r in out["hfma"][:3]] == [1.0478515625, 1.046875, 1.046875]
    assert [r[3].value for r in out["bfma"][3:6]] == [1.1328125, 1.125, 1.125]


def test_half_math_functions(out):
    fns = [np.sqrt, lambda x: 1 / np.sqrt(x), lambda x: 1 / x, np.exp, np.exp2, lambda x: 10.0**x, np.log, np.log2,
           np.log10, np.sin, np.cos, np.tanh, np.ceil, np.floor, np.rint, np.trunc]  # fmt: skip
    for key, to16 in (
        ("hmath", lambda v: float(np.float16(v))),
        ("bmath", lambda v: rounded(v, BF16) if math.isfinite(v) else v),
    ):
        for h, *res in out[key]:
            with np.errstate(all="ignore"):
                want = [to16(float(fn(np.float64(h.value)))) for fn in fns]
            assert all(same(r.value, w) for r, w in zip(res, want, strict=True)), (key, h, [r.value for r in res], want)


def test_integers_to_bfloat16_directed(out):
    for n, *got in out["i2bf"]:
        i32 = _signed(n, 32)
        want = [rounded(i32, BF16, "rz"), rounded(i32, BF16, "ru"), rounded(i32, BF16, "rd"), rounded(n, BF16, "ru"),
                rounded(n, BF16, "rd"), rounded(n & 0xFFFFFFFF, BF16, "ru"), rounded(n % 2**64, BF16, "rz"),
                rounded(_signed(n, 16), BF16, "ru"), rounded(n & 0xFFFF, BF16, "rd")]  # fmt: skip
        assert [g.value for g in got] == want, n


# ---------------------------------------------------------------- atomics
def test_atomics_from_four_threads(out):
    ((fsum, dsum, isum, usub, usum, inc, cas, lmax, lmin, ormask, xmask),) = out["athreads"]
    assert (fsum, dsum, isum, usub, usum) == (400000.0, 200000.0, 400000, 0, 1200000)
    assert inc == 400000 % 10  # atomicInc(…, 9) wraps from 9 to 0
    assert cas == 400000
    assert (lmax, lmin) == (399999 - 300000, -7)
    assert (ormask, xmask) == (0x01010101, 0)


def test_atomic_add_16_bit_and_vector_types(out):
    ((h, h2x, h2y, b, b2x, b2y, *f),) = out["ahalf"]
    # 4000 additions stall where the spacing of the type reaches twice the addend (ties to even)
    assert (h.value, h2x.value, h2y.value) == (2048.0, 2048.0, 1024.0)
    assert (b.value, b2x.value, b2y.value) == (256.0, 256.0, 128.0)
    assert f == [4000.0, 8000.0, 4000.0, 8000.0, 12000.0, 16000.0]


def test_atomic_single_thread_semantics(out):
    assert out["aincdec"] == [[5, 0, 0, 1, 0, 7, 9, 7, 3, 2]]
    ((*got,),) = out["aone"]
    want = [
        10, 20, 20, 2,  # int: exch 10->20, cas 19 fails, cas 20->40; i after atomicMin(-3) then atomicMax(2)
        1.5, 2.5,  # float exch
        1, 2**64 - 1, 5,  # ull exch 1->~0, cas ~0->5
        7, 65535, 65535,  # unsigned short cas 7->65535, then cas 7 fails
        -5, 0xFB, 0x1FB, 4,  # long long and 0xFF, or 0x100, xor 0x1FF
        40, -3,  # int min, max: old values
        2, 100, 50, 50,  # unsigned max 100, min 50, and 0x33: old values, then 50 & 0x33
    ]  # fmt: skip
    assert got == want


def test_clock64_is_monotonic(out):
    ((c0, c1),) = out["clock"]
    assert c1 > c0 > 0
