// cuforge/cpu_half.h: the __half / __nv_bfloat16 functions that CUDA's cuda_fp16.h and
// cuda_bf16.h declare for the device only (included by cuforge/cpu_math.h). Their types,
// operators, comparisons, __hadd/__hmul/..., and conversions to and from float, double and the
// _rn/_rz integer forms already work on the host and are CUDA's own.
#pragma once
#include <cmath>

namespace cuforge_cpu_math {

inline double widen(__half h) { return double(__half2float(h)); }
inline double widen(__nv_bfloat16 h) { return double(__bfloat162float(h)); }
template <class H> inline H narrow(double x);
template <> inline __half narrow<__half>(double x) { return __double2half(x); }
template <> inline __nv_bfloat16 narrow<__nv_bfloat16>(double x) { return __double2bfloat16(x); }
template <class H2> struct lanes;
template <> struct lanes<__half2> {
    using H = __half;
    static __half2 make(__half a, __half b) { return __halves2half2(a, b); }
};
template <> struct lanes<__nv_bfloat162> {
    using H = __nv_bfloat16;
    static __nv_bfloat162 make(__nv_bfloat16 a, __nv_bfloat16 b) { return __halves2bfloat162(a, b); }
};

// a * b + c with one rounding to H. The product of two 16-bit floats is exact in double; the
// sum is rounded to odd in double (nearest, then the odd neighbour on the exact value's side
// if inexact), which CUDA's double-to-half/bfloat16 conversion then rounds to nearest
// correctly, since 53 bits exceed 16-bit precision + 2.
template <class H> inline H fma_once(H ha, H hb, H hc) {
    const double p = widen(ha) * widen(hb), c = widen(hc);
    double s = p + c;
    if (std::isfinite(s)) {
        const double bb = s - p, err = (p - (s - bb)) + (c - bb);  // exact: p + c == s + err
        unsigned long long bits;
        std::memcpy(&bits, &s, sizeof bits);
        if (err != 0.0 && (bits & 1u) == 0u) s = std::nextafter(s, err > 0.0 ? INFINITY : -INFINITY);
    }
    return narrow<H>(s);
}
template <class H> inline H sat(H h) {
    const double x = widen(h);
    return narrow<H>(x >= 1.0 ? 1.0 : (x > 0.0 ? x : 0.0));
}
// An int or unsigned result saturated to 16 bits, as the GPU's cvt to s16/u16.
inline short to_short(int i) { return short(i < -32768 ? -32768 : (i > 32767 ? 32767 : i)); }
inline unsigned short to_ushort(unsigned int u) { return (unsigned short)(u > 65535u ? 65535u : u); }
template <class H> inline H relu(H h) {
    const double x = widen(h);
    return x != x ? narrow<H>(NAN) : (x < 0.0 ? narrow<H>(0.0) : h);
}

}  // namespace cuforge_cpu_math

// ---------------------------------------------------------------- integer conversions
// Half to float is exact, so each is the float conversion of the same rounding mode.
#define CF_H2I_ALL(PREFIX, H, TOF)                                                            \
    inline int PREFIX##2int_rn(H h) { return __float2int_rn(TOF(h)); }                          \
    inline int PREFIX##2int_ru(H h) { return __float2int_ru(TOF(h)); }                          \
    inline int PREFIX##2int_rd(H h) { return __float2int_rd(TOF(h)); }                          \
    inline unsigned int PREFIX##2uint_rn(H h) { return __float2uint_rn(TOF(h)); }               \
    inline unsigned int PREFIX##2uint_ru(H h) { return __float2uint_ru(TOF(h)); }               \
    inline unsigned int PREFIX##2uint_rd(H h) { return __float2uint_rd(TOF(h)); }               \
    inline long long PREFIX##2ll_rn(H h) { return __float2ll_rn(TOF(h)); }                      \
    inline long long PREFIX##2ll_ru(H h) { return __float2ll_ru(TOF(h)); }                      \
    inline long long PREFIX##2ll_rd(H h) { return __float2ll_rd(TOF(h)); }                      \
    inline unsigned long long PREFIX##2ull_rn(H h) { return __float2ull_rn(TOF(h)); }           \
    inline unsigned long long PREFIX##2ull_ru(H h) { return __float2ull_ru(TOF(h)); }           \
    inline unsigned long long PREFIX##2ull_rd(H h) { return __float2ull_rd(TOF(h)); }           \
    inline short PREFIX##2short_rn(H h) { return cuforge_cpu_math::to_short(__float2int_rn(TOF(h))); }         \
    inline short PREFIX##2short_ru(H h) { return cuforge_cpu_math::to_short(__float2int_ru(TOF(h))); }         \
    inline short PREFIX##2short_rd(H h) { return cuforge_cpu_math::to_short(__float2int_rd(TOF(h))); }         \
    inline unsigned short PREFIX##2ushort_rn(H h) { return cuforge_cpu_math::to_ushort(__float2uint_rn(TOF(h))); } \
    inline unsigned short PREFIX##2ushort_ru(H h) { return cuforge_cpu_math::to_ushort(__float2uint_ru(TOF(h))); } \
    inline unsigned short PREFIX##2ushort_rd(H h) { return cuforge_cpu_math::to_ushort(__float2uint_rd(TOF(h))); }
CF_H2I_ALL(__half, __half, __half2float)
CF_H2I_ALL(__bfloat16, __nv_bfloat16, __bfloat162float)
#undef CF_H2I_ALL

// Integers to bfloat16 in a directed mode: to float in that mode, then to bfloat16 in it (two
// roundings in one direction give the one rounding, as float's grid contains bfloat16's).
#define CF_I2BF(NAME, I, TOF)                                                                                 \
    inline __nv_bfloat16 NAME##_rz(I x) { return __float2bfloat16_rz(TOF##_rz(x)); }                         \
    inline __nv_bfloat16 NAME##_ru(I x) { return __float2bfloat16_ru(TOF##_ru(x)); }                         \
    inline __nv_bfloat16 NAME##_rd(I x) { return __float2bfloat16_rd(TOF##_rd(x)); }
CF_I2BF(__int2bfloat16, int, __int2float)
CF_I2BF(__uint2bfloat16, unsigned int, __uint2float)
CF_I2BF(__ll2bfloat16, long long, __ll2float)
CF_I2BF(__ull2bfloat16, unsigned long long, __ull2float)
CF_I2BF(__short2bfloat16, short, __int2float)
CF_I2BF(__ushort2bfloat16, unsigned short, __uint2float)
#undef CF_I2BF

// ---------------------------------------------------------------- fused multiply-add
#define CF_FMA(H, H2)                                                                                  \
    inline H __hfma(H a, H b, H c) { return cuforge_cpu_math::fma_once(a, b, c); }                     \
    inline H __hfma_sat(H a, H b, H c) { return cuforge_cpu_math::sat(__hfma(a, b, c)); }              \
    inline H __hfma_relu(H a, H b, H c) { return cuforge_cpu_math::relu(__hfma(a, b, c)); }            \
    inline H2 __hfma2(H2 a, H2 b, H2 c) { return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }   \
    inline H2 __hfma2_sat(H2 a, H2 b, H2 c) { return {__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y)}; } \
    inline H2 __hfma2_relu(H2 a, H2 b, H2 c) { return {__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)}; } \
    /* complex a * b + c, each component fused in float and rounded once */                           \
    inline H2 __hcmadd(H2 a, H2 b, H2 c) {                                                             \
        const float ax = float(a.x), ay = float(a.y), bx = float(b.x), by = float(b.y);                \
        return {H(std::fma(-ay, by, std::fma(ax, bx, float(c.x)))), H(std::fma(ay, bx, std::fma(ax, by, float(c.y))))}; \
    }
CF_FMA(__half, __half2)
CF_FMA(__nv_bfloat16, __nv_bfloat162)
#undef CF_FMA

// ---------------------------------------------------------------- math functions
// The double function rounded once to the 16-bit type (see cpu_math.h's list).
#define CF_HMATH2(NAME, NAME2, EXPR)                                                             \
    inline __half NAME(__half h) { const double x = cuforge_cpu_math::widen(h); return __double2half(EXPR); } \
    inline __nv_bfloat16 NAME(__nv_bfloat16 h) {                                                 \
        const double x = cuforge_cpu_math::widen(h);                                             \
        return __double2bfloat16(EXPR);                                                          \
    }                                                                                            \
    inline __half2 NAME2(__half2 v) { return __halves2half2(NAME(v.x), NAME(v.y)); }             \
    inline __nv_bfloat162 NAME2(__nv_bfloat162 v) { return __halves2bfloat162(NAME(v.x), NAME(v.y)); }
CF_HMATH2(hsqrt, h2sqrt, std::sqrt(x))
CF_HMATH2(hrsqrt, h2rsqrt, 1.0 / std::sqrt(x))
CF_HMATH2(hrcp, h2rcp, 1.0 / x)
CF_HMATH2(hexp, h2exp, std::exp(x))
CF_HMATH2(hexp2, h2exp2, std::exp2(x))
CF_HMATH2(hexp10, h2exp10, std::pow(10.0, x))
CF_HMATH2(hlog, h2log, std::log(x))
CF_HMATH2(hlog2, h2log2, std::log2(x))
CF_HMATH2(hlog10, h2log10, std::log10(x))
CF_HMATH2(hsin, h2sin, std::sin(x))
CF_HMATH2(hcos, h2cos, std::cos(x))
CF_HMATH2(htanh, h2tanh, std::tanh(x))
CF_HMATH2(htanh_approx, h2tanh_approx, std::tanh(x))
CF_HMATH2(hceil, h2ceil, std::ceil(x))
CF_HMATH2(hfloor, h2floor, std::floor(x))
CF_HMATH2(hrint, h2rint, std::nearbyint(x))
CF_HMATH2(htrunc, h2trunc, std::trunc(x))
#undef CF_HMATH2
