// cuforge/cpu_math.h: CUDA's device math API, intrinsics and atomics for a kernel compiled for
// the host (cuforge's CPU backend), so that a kernel body calling them compiles unchanged and
// gives the GPU's results.
//
// Included by cuforge_cpu.h after crt/host_defines.h, <vector_types.h> and the C++ standard
// headers. CUDA's own cuda_fp16.h and cuda_bf16.h already give __half / __nv_bfloat16 and
// their vectors on the host (types, operators, comparisons, conversions to and from float);
// this header adds only what those and <cmath> lack:
//   cpu_math.h        float/double math under CUDA's names, min/max, float intrinsics,
//                     conversions with explicit rounding
//   cpu_intrinsics.h  integer intrinsics, type punning, cache-hinted loads and stores
//   cpu_half.h        the half/bfloat16 functions cuda_fp16.h/cuda_bf16.h keep device-only
//   cpu_atomic.h      atomics, fences, clock64, __nanosleep
//
// Results computed more exactly here than on a GPU (the GPU's value lies within the error
// bound CUDA documents for it; a kernel that needs the GPU's exact bits must not use these):
//   __expf __exp10f __logf __log2f __log10f __sinf __cosf __tanf __sincosf __powf __fdividef
//   fdividef: the correctly rounded libm function or quotient, not the hardware approximation
//   (__fdividef(x, y) with 2^126 < |y| < 2^128 is x / y here, 0 on a GPU).
//   rsqrtf rsqrt rcbrtf rcbrt sinpif cospif sincospif exp10f norm3df rnorm3df norm4df
//   rnorm4df normf rnormf rhypotf and their double forms: computed in double (or long double
//   for the double forms where it matters) and rounded once; the GPU is within 1-2 ulp.
//   __frsqrt_rn: correctly rounded, as CUDA documents it.
//   hsqrt hrsqrt hrcp hexp hexp2 hexp10 hlog hlog2 hlog10 hsin hcos htanh htanh_approx and
//   their h2 forms: the double function rounded once to half/bfloat16.
//   __hcmadd: fused in float, rounded once per component.
// Exact everywhere (bit for bit the GPU's result): every _rn/_rz/_ru/_rd conversion, the
// arithmetic intrinsics __fadd_rn ... __fma_rn (never contracted with neighbouring operations)
// and their directed roundings (__fadd_rz ... __fma_rd),
// __hfma and its variants (fused, one rounding), the integer intrinsics, the atomics.
#pragma once
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector_functions.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// ---------------------------------------------------------------- <cmath> in the global namespace
// CUDA's headers put float overloads of the math functions in the global namespace, so that
// sqrt(x) with a float x is the float function returning float; glibc's <math.h> declares only
// the double one there.
using std::abs;
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atan2;
using std::atanh;
using std::cbrt;
using std::ceil;
using std::copysign;
using std::cos;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp;
using std::exp2;
using std::expm1;
using std::fabs;
using std::fdim;
using std::floor;
using std::fma;
using std::fmax;
using std::fmin;
using std::fmod;
using std::fpclassify;
using std::frexp;
using std::hypot;
using std::ilogb;
using std::isfinite;
using std::isinf;
using std::isnan;
using std::isnormal;
using std::ldexp;
using std::lgamma;
using std::llrint;
using std::llround;
using std::log;
using std::log10;
using std::log1p;
using std::log2;
using std::logb;
using std::lrint;
using std::lround;
using std::modf;
using std::nearbyint;
using std::nextafter;
using std::pow;
using std::remainder;
using std::remquo;
using std::rint;
using std::round;
using std::scalbln;
using std::scalbn;
using std::signbit;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using std::tgamma;
using std::trunc;

namespace cuforge_cpu_math {

// A value the optimiser may not fuse with its neighbours (a*b then +c into an FMA): the
// _rn intrinsics promise one rounding each, which contraction under -ffp-contract=fast breaks.
template <class F> inline F opaque(F x) {
#if defined(__x86_64__)
    __asm__("" : "+x"(x));
#else
    volatile F v = x;
    x = v;
#endif
    return x;
}

// Both operands converted to U first: CUDA's mixed signed/unsigned min and max compare as unsigned.
template <class U, class A, class B> inline U lesser(A a, B b) { return static_cast<U>(a) < static_cast<U>(b) ? static_cast<U>(a) : static_cast<U>(b); }
template <class U, class A, class B> inline U greater(A a, B b) { return static_cast<U>(a) > static_cast<U>(b) ? static_cast<U>(a) : static_cast<U>(b); }

enum Mode { RN, RZ, RU, RD };

template <Mode M, class F> inline F round_int(F x) {
    if (M == RN) return std::nearbyint(x);  // the default rounding mode: to nearest, ties to even
    if (M == RZ) return std::trunc(x);
    if (M == RU) return std::ceil(x);
    return std::floor(x);
}

// Float to integer as the GPU's cvt: rounded in mode M, saturated to the integer's range; NaN
// gives 0 for 32-bit results and 0x8000000000000000 for 64-bit ones.
template <class I, Mode M, class F> inline I to_int(F x) {
    constexpr bool wide = sizeof(I) == 8;
    if (x != x) {
#ifdef CUFORGE_CPU_CHECK
        (void)static_cast<volatile I>(I(x));  // (the float-to-integer check sees the NaN: a marked one is reported)
#endif
        return wide ? I(1ull << 63) : I(0);
    }
    const F r = round_int<M>(x);
    const F top = std::is_signed<I>::value ? std::ldexp(F(1), int(sizeof(I) * 8 - 1)) : std::ldexp(F(1), int(sizeof(I) * 8));
    if (r >= top) return std::numeric_limits<I>::max();
    if (r < F(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    return I(r);
}

// An integer or a double rounded to F in mode M: the conversion to nearest, then one step to
// the neighbour on the right side when it went the wrong way. long double holds every 64-bit
// integer and every double exactly (x86-64's 80-bit format), so the comparison is exact.
template <class F, Mode M, class T> inline F to_float(T v) {
    const F f = F(v);
    if (M == RN || f != f) return f;
    const long double exact = (long double)v, got = (long double)f;
    if (got == exact) return f;
    const bool above = got > exact;
    const bool up = M == RU || (M == RZ && exact < 0);
    if (up) return above ? f : std::nextafter(f, F(INFINITY));
    return above ? std::nextafter(f, F(-INFINITY)) : f;
}

// sin(pi x) and cos(pi x): reduced exactly (fmod) to [-1/2, 1/2] or [0, 1/2], then evaluated in
// long double, so that the double result is rounded once from a more precise value; exact
// (0, +-1) at integers and half-integers.
constexpr long double PI_L = 3.141592653589793238462643383279502884L;
inline double sinpi(double x) {
    if (std::isinf(x)) return NAN;
    if (x == std::trunc(x)) return std::copysign(0.0, x);
    double t = std::fmod(x, 2.0);  // exact, in (-2, 2)
    if (t > 1.0) t -= 2.0;
    if (t < -1.0) t += 2.0;  // now in [-1, 1]: sin(pi t) = sin(pi (sign(t) - t))
    if (t > 0.5) t = 1.0 - t;
    if (t < -0.5) t = -1.0 - t;
    return double(std::sin(PI_L * t));
}
inline double cospi(double x) {
    if (std::isinf(x)) return NAN;
    double t = std::fabs(std::fmod(x, 2.0));  // cos(pi x) is even and 2-periodic; t in [0, 2)
    if (t > 1.0) t = 2.0 - t;                 // in [0, 1]
    if (t == 0.5) return 0.0;
    return t < 0.5 ? double(std::cos(PI_L * t)) : -double(std::cos(PI_L * (1.0 - t)));
}

}  // namespace cuforge_cpu_math

// ---------------------------------------------------------------- CUDA-only float and double math
inline float rsqrtf(float x) { return float(1.0 / std::sqrt(double(x))); }
inline double rsqrt(double x) { return double(1.0L / std::sqrt((long double)x)); }
inline float rcbrtf(float x) { return float(1.0 / std::cbrt(double(x))); }
inline double rcbrt(double x) { return double(1.0L / std::cbrt((long double)x)); }
inline float sinpif(float x) { return float(cuforge_cpu_math::sinpi(x)); }
inline float cospif(float x) { return float(cuforge_cpu_math::cospi(x)); }
inline double sinpi(double x) { return cuforge_cpu_math::sinpi(x); }
inline double cospi(double x) { return cuforge_cpu_math::cospi(x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
#if !defined(__USE_GNU)  // glibc's GNU extensions already declare these with CUDA's signatures
inline float exp10f(float x) { return float(std::pow(10.0, double(x))); }
inline double exp10(double x) { return std::pow(10.0, x); }
inline void sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline void sincos(double x, double* s, double* c) { *s = std::sin(x); *c = std::cos(x); }
#endif
inline float fdividef(float x, float y) { return x / y; }
inline float rhypotf(float x, float y) { return float(1.0 / std::hypot(double(x), double(y))); }
inline double rhypot(double x, double y) { return double(1.0L / std::hypot((long double)x, (long double)y)); }
inline float norm3df(float a, float b, float c) { return float(std::sqrt(double(a) * a + double(b) * b + double(c) * c)); }
inline float rnorm3df(float a, float b, float c) { return float(1.0 / std::sqrt(double(a) * a + double(b) * b + double(c) * c)); }
inline float norm4df(float a, float b, float c, float d) {
    return float(std::sqrt(double(a) * a + double(b) * b + double(c) * c + double(d) * d));
}
inline float rnorm4df(float a, float b, float c, float d) {
    return float(1.0 / std::sqrt(double(a) * a + double(b) * b + double(c) * c + double(d) * d));
}
inline double norm3d(double a, double b, double c) { return double(std::sqrt((long double)a * a + (long double)b * b + (long double)c * c)); }
inline double rnorm3d(double a, double b, double c) { return double(1.0L / std::sqrt((long double)a * a + (long double)b * b + (long double)c * c)); }
inline double norm4d(double a, double b, double c, double d) {
    return double(std::sqrt((long double)a * a + (long double)b * b + (long double)c * c + (long double)d * d));
}
inline double rnorm4d(double a, double b, double c, double d) {
    return double(1.0L / std::sqrt((long double)a * a + (long double)b * b + (long double)c * c + (long double)d * d));
}
inline float normf(int dim, const float* p) {
    double s = 0;
    for (int i = 0; i < dim; ++i) s += double(p[i]) * p[i];
    return float(std::sqrt(s));
}
inline float rnormf(int dim, const float* p) { return float(1.0 / double(normf(dim, p))); }
inline double norm(int dim, const double* p) {
    long double s = 0;
    for (int i = 0; i < dim; ++i) s += (long double)p[i] * p[i];
    return double(std::sqrt(s));
}
inline double rnorm(int dim, const double* p) {
    long double s = 0;
    for (int i = 0; i < dim; ++i) s += (long double)p[i] * p[i];
    return double(1.0L / std::sqrt(s));
}

// The inverse error functions, the normal distribution's, and the modified Bessel functions of
// the first kind of order 0 and 1: computed in long double and rounded to the type. erfinv and
// erfcinv refine Giles' first guess with Newton steps on erf or erfc (erfc near its ends, where
// erf has no digits left); the Bessel functions sum their series, whose terms are all positive.
namespace cuforge_cpu_math {
inline long double erfinv_guess(long double y, long double w) {  // w = -log((1 - y)(1 + y))
    long double p;
    if (w < 5) {
        w -= 2.5L;
        p = 2.81022636e-08L;
        for (long double c : {3.43273939e-07L, -3.5233877e-06L, -4.39150654e-06L, 0.00021858087L, -0.00125372503L,
                              -0.00417768164L, 0.246640727L, 1.50140941L})
            p = c + p * w;
    } else {
        w = std::sqrt(w) - 3;
        p = -0.000200214257L;
        for (long double c : {0.000100950558L, 0.00134934322L, -0.00367342844L, 0.00573950773L, -0.0076224613L,
                              0.00943887047L, 1.00167406L, 2.83297682L})
            p = c + p * w;
    }
    return p * y;
}
constexpr long double two_over_sqrt_pi = 1.1283791670955125738961589031215452L;
// erfc's inverse at z in [0, 2], from z itself (no digits lost to 1 - z near 0).
inline long double erfcinv(long double z) {
    if (std::isnan(z) || z < 0 || z > 2) return NAN;
    if (z == 0) return INFINITY;
    if (z == 2) return -INFINITY;
    if (z > 1) return -erfcinv(2 - z);
    long double x = erfinv_guess(1 - z, -std::log(z * (2 - z)));
    for (int i = 0; i < 4; ++i) x += (std::erfc(x) - z) / (two_over_sqrt_pi * std::exp(-x * x));
    return x;
}
inline long double erfinv(long double y) {
    if (std::isnan(y) || y < -1 || y > 1) return NAN;
    if (y < 0) return -erfinv(-y);
    if (y >= 0.5L) return erfcinv(1 - y);
    long double x = erfinv_guess(y, -std::log((1 - y) * (1 + y)));
    for (int i = 0; i < 4; ++i) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
    return x;
}
inline long double bessel_i(int order, long double x) {  // order 0 (even) or 1 (odd)
    long double a = std::fabs(x), q = a * a / 4, term = order ? a / 2 : 1, sum = term;
    for (int k = 1; k < 2000 && term > sum * 1e-21L; ++k) sum += term *= q / ((long double)k * (k + order));
    return order && x < 0 ? -sum : sum;
}
}  // namespace cuforge_cpu_math
inline float erfinvf(float y) { return float(cuforge_cpu_math::erfinv(y)); }
inline double erfinv(double y) { return double(cuforge_cpu_math::erfinv(y)); }
inline float erfcinvf(float z) { return float(cuforge_cpu_math::erfcinv(z)); }
inline double erfcinv(double z) { return double(cuforge_cpu_math::erfcinv(z)); }
inline float normcdff(float x) { return float(0.5L * std::erfc(-(long double)x / 1.4142135623730950488016887242097L)); }
inline double normcdf(double x) { return double(0.5L * std::erfc(-(long double)x / 1.4142135623730950488016887242097L)); }
inline float normcdfinvf(float p) { return float(-1.4142135623730950488016887242097L * cuforge_cpu_math::erfcinv(2.0L * p)); }
inline double normcdfinv(double p) { return double(-1.4142135623730950488016887242097L * cuforge_cpu_math::erfcinv(2.0L * p)); }
inline float cyl_bessel_i0f(float x) { return float(cuforge_cpu_math::bessel_i(0, x)); }
inline double cyl_bessel_i0(double x) { return double(cuforge_cpu_math::bessel_i(0, x)); }
inline float cyl_bessel_i1f(float x) { return float(cuforge_cpu_math::bessel_i(1, x)); }
inline double cyl_bessel_i1(double x) { return double(cuforge_cpu_math::bessel_i(1, x)); }

// The fast-math intrinsics, exact here (see the list at the top).
inline float __fdividef(float x, float y) { return x / y; }
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __tanhf(float x) { return std::tanh(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
// Clamped to [0, 1]; NaN gives +0, as the GPU's .sat modifier.
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
inline float saturate(float x) { return __saturatef(x); }

// One IEEE operation, rounded to nearest even, never fused with a neighbour.
#define CF_ARITH_RN(T, P)                                                                          \
    inline T P##add_rn(T a, T b) { return cuforge_cpu_math::opaque(a + b); }                      \
    inline T P##sub_rn(T a, T b) { return cuforge_cpu_math::opaque(a - b); }                      \
    inline T P##mul_rn(T a, T b) { return cuforge_cpu_math::opaque(a * b); }                      \
    inline T P##div_rn(T a, T b) { return cuforge_cpu_math::opaque(a / b); }                      \
    inline T P##rcp_rn(T a) { return cuforge_cpu_math::opaque(T(1) / a); }
CF_ARITH_RN(float, __f)
CF_ARITH_RN(double, __d)
#undef CF_ARITH_RN
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frsqrt_rn(float a) { return rsqrtf(a); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }

// The directed roundings (_rz toward zero, _ru up, _rd down) of one IEEE operation: the
// processor's own operation under that rounding mode (<cfenv>), so exact as the GPU's, subnormal
// results and overflow included. Operands are read, and the result written, through volatiles
// between the mode's changes, so that the compiler neither folds the operation nor moves it out.
namespace cuforge_cpu_math {
template <Mode M, class F, class Op> inline F directed(Op op, F a, F b = F(0), F c = F(0)) {
    int old = std::fegetround();
    std::fesetround(M == RZ ? FE_TOWARDZERO : M == RU ? FE_UPWARD : FE_DOWNWARD);
    volatile F va = a, vb = b, vc = c;
    volatile F r = op(F(va), F(vb), F(vc));
    std::fesetround(old);
    return r;
}
}  // namespace cuforge_cpu_math
#define CF_ARITH_DIRECTED(T, P, FMA, M, S)                                                                             \
    inline T P##add_##S(T a, T b) { return cuforge_cpu_math::directed<cuforge_cpu_math::M>([](T x, T y, T) { return x + y; }, a, b); } \
    inline T P##sub_##S(T a, T b) { return cuforge_cpu_math::directed<cuforge_cpu_math::M>([](T x, T y, T) { return x - y; }, a, b); } \
    inline T P##mul_##S(T a, T b) { return cuforge_cpu_math::directed<cuforge_cpu_math::M>([](T x, T y, T) { return x * y; }, a, b); } \
    inline T P##div_##S(T a, T b) { return cuforge_cpu_math::directed<cuforge_cpu_math::M>([](T x, T y, T) { return x / y; }, a, b); } \
    inline T P##rcp_##S(T a) { return cuforge_cpu_math::directed<cuforge_cpu_math::M>([](T x, T, T) { return T(1) / x; }, a); }     \
    inline T P##sqrt_##S(T a) { return cuforge_cpu_math::directed<cuforge_cpu_math::M>([](T x, T, T) { return std::sqrt(x); }, a); } \
    inline T FMA##_##S(T a, T b, T c) {                                                                                \
        return cuforge_cpu_math::directed<cuforge_cpu_math::M>([](T x, T y, T z) { return std::fma(x, y, z); }, a, b, c); \
    }
#define CF_ARITH_ALL(T, P, FMA) CF_ARITH_DIRECTED(T, P, FMA, RZ, rz) CF_ARITH_DIRECTED(T, P, FMA, RU, ru) CF_ARITH_DIRECTED(T, P, FMA, RD, rd)
CF_ARITH_ALL(float, __f, __fmaf)
CF_ARITH_ALL(double, __d, __fma)
#undef CF_ARITH_ALL
#undef CF_ARITH_DIRECTED
// The _ieee forms of fmaf (no flush of subnormals, which the CPU never does anyway).
inline float __fmaf_ieee_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fmaf_ieee_rz(float a, float b, float c) { return __fmaf_rz(a, b, c); }
inline float __fmaf_ieee_ru(float a, float b, float c) { return __fmaf_ru(a, b, c); }
inline float __fmaf_ieee_rd(float a, float b, float c) { return __fmaf_rd(a, b, c); }

// ---------------------------------------------------------------- min and max
// CUDA's overloads (crt/math_functions.hpp): a mixed signed/unsigned pair compares as unsigned
// and returns the unsigned type; float/double pairs use fmin/fmax (a NaN loses to a number).
// Non-template functions: std::min and std::max are untouched, and min(a, b) after
// `using namespace std` still picks these (an exact non-template match beats the template).
#define CF_MINMAX(T, U)                                                      \
    inline U min(T a, T b) { return cuforge_cpu_math::lesser<U>(a, b); }     \
    inline U max(T a, T b) { return cuforge_cpu_math::greater<U>(a, b); }
CF_MINMAX(int, int)
CF_MINMAX(unsigned int, unsigned int)
CF_MINMAX(long, long)
CF_MINMAX(unsigned long, unsigned long)
CF_MINMAX(long long, long long)
CF_MINMAX(unsigned long long, unsigned long long)
#undef CF_MINMAX
#define CF_MINMAX_MIXED(A, B, U)                                             \
    inline U min(A a, B b) { return cuforge_cpu_math::lesser<U>(a, b); }     \
    inline U max(A a, B b) { return cuforge_cpu_math::greater<U>(a, b); }    \
    inline U min(B a, A b) { return cuforge_cpu_math::lesser<U>(a, b); }     \
    inline U max(B a, A b) { return cuforge_cpu_math::greater<U>(a, b); }
CF_MINMAX_MIXED(int, unsigned int, unsigned int)
CF_MINMAX_MIXED(long, unsigned long, unsigned long)
CF_MINMAX_MIXED(long long, unsigned long long, unsigned long long)
#undef CF_MINMAX_MIXED
// (the C functions, which a checked build keeps calls and wraps: cuforge/_cpu/check.py)
inline float min(float a, float b) { return ::fminf(a, b); }
inline float max(float a, float b) { return ::fmaxf(a, b); }
inline double min(double a, double b) { return ::fmin(a, b); }
inline double max(double a, double b) { return ::fmax(a, b); }
inline double min(float a, double b) { return ::fmin(double(a), b); }
inline double max(float a, double b) { return ::fmax(double(a), b); }
inline double min(double a, float b) { return ::fmin(a, double(b)); }
inline double max(double a, float b) { return ::fmax(a, double(b)); }
inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// ---------------------------------------------------------------- conversions with explicit rounding
#define CF_CONV(NAME, R, A, EXPR)                                                        \
    inline R NAME##_rn(A x) { using namespace cuforge_cpu_math; return EXPR(RN); }       \
    inline R NAME##_rz(A x) { using namespace cuforge_cpu_math; return EXPR(RZ); }       \
    inline R NAME##_ru(A x) { using namespace cuforge_cpu_math; return EXPR(RU); }       \
    inline R NAME##_rd(A x) { using namespace cuforge_cpu_math; return EXPR(RD); }
#define CF_INT(I, M) to_int<I, M>(x)
#define CF_FLT(F, M) to_float<F, M>(x)
#define CF_I(M) CF_INT(int, M)
#define CF_U(M) CF_INT(unsigned int, M)
#define CF_LL(M) CF_INT(long long, M)
#define CF_ULL(M) CF_INT(unsigned long long, M)
#define CF_F(M) CF_FLT(float, M)
#define CF_D(M) CF_FLT(double, M)
CF_CONV(__float2int, int, float, CF_I)
CF_CONV(__float2uint, unsigned int, float, CF_U)
CF_CONV(__float2ll, long long, float, CF_LL)
CF_CONV(__float2ull, unsigned long long, float, CF_ULL)
CF_CONV(__double2int, int, double, CF_I)
CF_CONV(__double2uint, unsigned int, double, CF_U)
CF_CONV(__double2ll, long long, double, CF_LL)
CF_CONV(__double2ull, unsigned long long, double, CF_ULL)
CF_CONV(__int2float, float, int, CF_F)
CF_CONV(__uint2float, float, unsigned int, CF_F)
CF_CONV(__ll2float, float, long long, CF_F)
CF_CONV(__ull2float, float, unsigned long long, CF_F)
CF_CONV(__ll2double, double, long long, CF_D)
CF_CONV(__ull2double, double, unsigned long long, CF_D)
CF_CONV(__double2float, float, double, CF_F)
#undef CF_CONV
#undef CF_INT
#undef CF_FLT
#undef CF_I
#undef CF_U
#undef CF_LL
#undef CF_ULL
#undef CF_F
#undef CF_D
inline double __int2double_rn(int x) { return double(x); }
inline double __uint2double_rn(unsigned int x) { return double(x); }

#include "cpu_intrinsics.h"
#include "cpu_half.h"
#include "cpu_atomic.h"
