// cuforge/cpu_intrinsics.h: CUDA's integer intrinsics, type punning and cache-hinted loads and
// stores for the host, with the GPU's exact results (included by cuforge/cpu_math.h).
#pragma once
#include <cstdint>
#include <cstring>

namespace cuforge_cpu_math {
template <class To, class From> inline To bit_cast(From v) {
    static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
    To r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}
}  // namespace cuforge_cpu_math

// NVRTC's (and clang's) hint that a condition holds, never evaluated; GCC has no such builtin.
#ifndef __clang__
#define __builtin_assume(condition) ((void)sizeof(condition))
#endif

// ---------------------------------------------------------------- bit counts and reversal
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned int)x) << 32) | __brev((unsigned int)(x >> 32));
}

// Byte n of the result is byte (s >> 4n) & 7 of the 8 bytes {y, x} (x the low four). As the
// GPU's prmt, a selector nibble with its high bit set gives that byte's sign bit replicated.
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    const unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned int r = 0;
    for (int n = 0; n < 4; ++n) {
        const unsigned int sel = (s >> (4 * n)) & 0xFu;
        unsigned int b = (unsigned int)(v >> (8 * (sel & 7u))) & 0xFFu;
        if (sel & 8u) b = (b & 0x80u) ? 0xFFu : 0u;
        r |= b << (8 * n);
    }
    return r;
}

// ---------------------------------------------------------------- funnel shifts
// The 64-bit {hi, lo} shifted; _l/_r take the shift modulo 32, _lc/_rc clamp it to 32.
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)((v << (shift & 31u)) >> 32);
}
inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)((v << (shift < 32u ? shift : 32u)) >> 32);
}
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(v >> (shift & 31u));
}
inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(v >> (shift < 32u ? shift : 32u));
}

// ---------------------------------------------------------------- multiplies, sums of differences, averages
inline int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
inline unsigned int __umulhi(unsigned int x, unsigned int y) { return (unsigned int)(((unsigned long long)x * y) >> 32); }
inline long long __mul64hi(long long x, long long y) { return (long long)(((__int128)x * y) >> 64); }
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
    return (unsigned long long)(((unsigned __int128)x * y) >> 64);
}
// The low 32 bits of the product of the operands' low 24 bits (sign-extended for __mul24).
inline int __mul24(int x, int y) {
    const long long a = (long long)(int)((unsigned int)x << 8) >> 8, b = (long long)(int)((unsigned int)y << 8) >> 8;
    return (int)(unsigned int)(a * b);
}
inline unsigned int __umul24(unsigned int x, unsigned int y) {
    return (unsigned int)((unsigned long long)(x & 0xFFFFFFu) * (y & 0xFFFFFFu));
}
inline unsigned int __sad(int x, int y, unsigned int z) {
    return (x > y ? (unsigned int)x - (unsigned int)y : (unsigned int)y - (unsigned int)x) + z;
}
inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return (x > y ? x - y : y - x) + z; }
// Averages of the exact (33-bit) sum: __hadd rounds down, __rhadd up.
inline int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
inline int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
inline unsigned int __uhadd(unsigned int x, unsigned int y) { return (unsigned int)(((unsigned long long)x + y) >> 1); }
inline unsigned int __urhadd(unsigned int x, unsigned int y) { return (unsigned int)(((unsigned long long)x + y + 1) >> 1); }

// ---------------------------------------------------------------- dot products of packed integers (sm_61)
// __dp4a: c plus the four products of the operands' bytes (signed or unsigned). __dp2a_lo/_hi:
// c plus the products of a's two 16-bit halves and b's low (_lo) or high (_hi) two bytes.
namespace cuforge_cpu_math {
template <class E, class T> inline E lane_of(T v, int k, int bits) {
    return (E)(v >> (bits * k));  // (the k-th field of `bits` bits, converted to E: signed or not)
}
}  // namespace cuforge_cpu_math
inline int __dp4a(int a, int b, int c) {
    int s = c;
    for (int k = 0; k < 4; ++k)
        s += (int)cuforge_cpu_math::lane_of<signed char>(a, k, 8) * (int)cuforge_cpu_math::lane_of<signed char>(b, k, 8);
    return s;
}
inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
    unsigned int s = c;
    for (int k = 0; k < 4; ++k)
        s += (unsigned int)cuforge_cpu_math::lane_of<unsigned char>(a, k, 8) *
             (unsigned int)cuforge_cpu_math::lane_of<unsigned char>(b, k, 8);
    return s;
}
inline int __dp4a(char4 a, char4 b, int c) { return c + a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) {
    return c + (unsigned int)a.x * b.x + (unsigned int)a.y * b.y + (unsigned int)a.z * b.z + (unsigned int)a.w * b.w;
}
inline int __dp2a_lo(int a, int b, int c) {
    using cuforge_cpu_math::lane_of;
    return c + (int)lane_of<short>(a, 0, 16) * (int)lane_of<signed char>(b, 0, 8) +
           (int)lane_of<short>(a, 1, 16) * (int)lane_of<signed char>(b, 1, 8);
}
inline int __dp2a_hi(int a, int b, int c) {
    using cuforge_cpu_math::lane_of;
    return c + (int)lane_of<short>(a, 0, 16) * (int)lane_of<signed char>(b, 2, 8) +
           (int)lane_of<short>(a, 1, 16) * (int)lane_of<signed char>(b, 3, 8);
}
inline unsigned int __dp2a_lo(unsigned int a, unsigned int b, unsigned int c) {
    using cuforge_cpu_math::lane_of;
    return c + (unsigned int)lane_of<unsigned short>(a, 0, 16) * lane_of<unsigned char>(b, 0, 8) +
           (unsigned int)lane_of<unsigned short>(a, 1, 16) * lane_of<unsigned char>(b, 1, 8);
}
inline unsigned int __dp2a_hi(unsigned int a, unsigned int b, unsigned int c) {
    using cuforge_cpu_math::lane_of;
    return c + (unsigned int)lane_of<unsigned short>(a, 0, 16) * lane_of<unsigned char>(b, 2, 8) +
           (unsigned int)lane_of<unsigned short>(a, 1, 16) * lane_of<unsigned char>(b, 3, 8);
}
inline int __dp2a_lo(short2 a, char4 b, int c) { return c + a.x * b.x + a.y * b.y; }
inline int __dp2a_hi(short2 a, char4 b, int c) { return c + a.x * b.z + a.y * b.w; }
inline unsigned int __dp2a_lo(ushort2 a, uchar4 b, unsigned int c) { return c + (unsigned int)a.x * b.x + (unsigned int)a.y * b.y; }
inline unsigned int __dp2a_hi(ushort2 a, uchar4 b, unsigned int c) { return c + (unsigned int)a.x * b.z + (unsigned int)a.y * b.w; }

// ---------------------------------------------------------------- SIMD video intrinsics
// Each of the word's 2 halfwords or 4 bytes apart (signed or unsigned, wrapping or saturating);
// comparisons give all ones (__vcmp*) or 1 (__vset*) per lane where true; __vsad* sums the
// lanes' absolute differences.
namespace cuforge_cpu_math {
template <int Bits, bool Signed> struct simd_lane {
    static constexpr unsigned mask = (1u << Bits) - 1;
    static int get(unsigned x, int k) {
        unsigned v = (x >> (Bits * k)) & mask;
        return Signed && (v >> (Bits - 1)) ? int(v) - (1 << Bits) : int(v);
    }
    static int lo() { return Signed ? -(1 << (Bits - 1)) : 0; }
    static int hi() { return Signed ? (1 << (Bits - 1)) - 1 : int(mask); }
    static int sat(int v) { return v < lo() ? lo() : v > hi() ? hi() : v; }
};
template <int Bits, bool Signed, class F> inline unsigned simd_map(unsigned a, unsigned b, F f) {
    using L = simd_lane<Bits, Signed>;
    unsigned r = 0;
    for (int k = 0; k < 32 / Bits; ++k) r |= (unsigned(f(L::get(a, k), L::get(b, k))) & L::mask) << (Bits * k);
    return r;
}
template <int Bits, bool Signed, class F> inline unsigned simd_sum(unsigned a, unsigned b, F f) {
    using L = simd_lane<Bits, Signed>;
    unsigned r = 0;
    for (int k = 0; k < 32 / Bits; ++k) r += unsigned(f(L::get(a, k), L::get(b, k)));
    return r;
}
}  // namespace cuforge_cpu_math
#define CF_SIMD(NAME, BITS, SIGNED, EXPR)                                                               \
    inline unsigned int NAME(unsigned int a, unsigned int b) {                                          \
        using L = cuforge_cpu_math::simd_lane<BITS, SIGNED>;                                            \
        (void)sizeof(L);                                                                                 \
        return cuforge_cpu_math::simd_map<BITS, SIGNED>(a, b, [](int x, int y) { (void)y; return EXPR; }); \
    }
#define CF_SIMD_BOTH(NAME, SIGNED, EXPR) CF_SIMD(NAME##2, 16, SIGNED, EXPR) CF_SIMD(NAME##4, 8, SIGNED, EXPR)
CF_SIMD_BOTH(__vadd, false, x + y)
CF_SIMD_BOTH(__vsub, false, x - y)
CF_SIMD_BOTH(__vaddss, true, L::sat(x + y))
CF_SIMD_BOTH(__vsubss, true, L::sat(x - y))
CF_SIMD_BOTH(__vaddus, false, L::sat(x + y))
CF_SIMD_BOTH(__vsubus, false, L::sat(x - y))
CF_SIMD_BOTH(__vabsdiffs, true, x > y ? x - y : y - x)
CF_SIMD_BOTH(__vabsdiffu, false, x > y ? x - y : y - x)
CF_SIMD_BOTH(__vavgu, false, (x + y + 1) >> 1)
CF_SIMD_BOTH(__vhaddu, false, (x + y) >> 1)
CF_SIMD_BOTH(__vmaxs, true, x > y ? x : y)
CF_SIMD_BOTH(__vmaxu, false, x > y ? x : y)
CF_SIMD_BOTH(__vmins, true, x < y ? x : y)
CF_SIMD_BOTH(__vminu, false, x < y ? x : y)
CF_SIMD_BOTH(__vcmpeq, false, x == y ? -1 : 0)
CF_SIMD_BOTH(__vcmpne, false, x != y ? -1 : 0)
CF_SIMD_BOTH(__vcmpges, true, x >= y ? -1 : 0)
CF_SIMD_BOTH(__vcmpgeu, false, x >= y ? -1 : 0)
CF_SIMD_BOTH(__vcmpgts, true, x > y ? -1 : 0)
CF_SIMD_BOTH(__vcmpgtu, false, x > y ? -1 : 0)
CF_SIMD_BOTH(__vcmples, true, x <= y ? -1 : 0)
CF_SIMD_BOTH(__vcmpleu, false, x <= y ? -1 : 0)
CF_SIMD_BOTH(__vcmplts, true, x < y ? -1 : 0)
CF_SIMD_BOTH(__vcmpltu, false, x < y ? -1 : 0)
CF_SIMD_BOTH(__vseteq, false, x == y)
CF_SIMD_BOTH(__vsetne, false, x != y)
CF_SIMD_BOTH(__vsetges, true, x >= y)
CF_SIMD_BOTH(__vsetgeu, false, x >= y)
CF_SIMD_BOTH(__vsetgts, true, x > y)
CF_SIMD_BOTH(__vsetgtu, false, x > y)
CF_SIMD_BOTH(__vsetles, true, x <= y)
CF_SIMD_BOTH(__vsetleu, false, x <= y)
CF_SIMD_BOTH(__vsetlts, true, x < y)
CF_SIMD_BOTH(__vsetltu, false, x < y)
#undef CF_SIMD_BOTH
#undef CF_SIMD
// One operand: absolute values (wrapping: -128 stays -128; __vabsss saturates to 127), negation.
inline unsigned int __vabs2(unsigned int a) { return __vabsdiffs2(a, 0u); }
inline unsigned int __vabs4(unsigned int a) { return __vabsdiffs4(a, 0u); }
inline unsigned int __vabsss2(unsigned int a) {
    return cuforge_cpu_math::simd_map<16, true>(a, 0u, [](int x, int) { return cuforge_cpu_math::simd_lane<16, true>::sat(x < 0 ? -x : x); });
}
inline unsigned int __vabsss4(unsigned int a) {
    return cuforge_cpu_math::simd_map<8, true>(a, 0u, [](int x, int) { return cuforge_cpu_math::simd_lane<8, true>::sat(x < 0 ? -x : x); });
}
inline unsigned int __vneg2(unsigned int a) { return __vsub2(0u, a); }
inline unsigned int __vneg4(unsigned int a) { return __vsub4(0u, a); }
inline unsigned int __vnegss2(unsigned int a) { return __vsubss2(0u, a); }
inline unsigned int __vnegss4(unsigned int a) { return __vsubss4(0u, a); }
// Sums of absolute differences.
inline unsigned int __vsads2(unsigned int a, unsigned int b) {
    return cuforge_cpu_math::simd_sum<16, true>(a, b, [](int x, int y) { return x > y ? x - y : y - x; });
}
inline unsigned int __vsads4(unsigned int a, unsigned int b) {
    return cuforge_cpu_math::simd_sum<8, true>(a, b, [](int x, int y) { return x > y ? x - y : y - x; });
}
inline unsigned int __vsadu2(unsigned int a, unsigned int b) {
    return cuforge_cpu_math::simd_sum<16, false>(a, b, [](int x, int y) { return x > y ? x - y : y - x; });
}
inline unsigned int __vsadu4(unsigned int a, unsigned int b) {
    return cuforge_cpu_math::simd_sum<8, false>(a, b, [](int x, int y) { return x > y ? x - y : y - x; });
}

// ---------------------------------------------------------------- DPX (sm_90 in hardware, emulated before it)
// Three-way max and min, with a ReLU (a floor of 0), after an add (wrapping), or telling which
// operand won (`pred`: a >= b for max, a <= b for min), of 32-bit integers or of a word's two
// 16-bit halves apart (signed s16x2, unsigned u16x2).
namespace cuforge_cpu_math {
template <int Bits, bool Signed, class F> inline unsigned simd_map3(unsigned a, unsigned b, unsigned c, F f) {
    using L = simd_lane<Bits, Signed>;
    unsigned r = 0;
    for (int k = 0; k < 32 / Bits; ++k) r |= (unsigned(f(L::get(a, k), L::get(b, k), L::get(c, k))) & L::mask) << (Bits * k);
    return r;
}
template <class T> inline T dpx_max(T x, T y) { return x > y ? x : y; }
template <class T> inline T dpx_min(T x, T y) { return x < y ? x : y; }
template <class T> inline T wrap_add(T x, T y) { return T(static_cast<typename std::make_unsigned<T>::type>(x) + static_cast<typename std::make_unsigned<T>::type>(y)); }
inline int wrap16(int v) { return int(short(static_cast<unsigned short>(v))); }
}  // namespace cuforge_cpu_math
#define CF_DPX3(NAME, EXPR)                                                                                   \
    inline int NAME##_s32(int a, int b, int c) { using namespace cuforge_cpu_math; return EXPR(int, a, b, c); } \
    inline unsigned int NAME##_u32(unsigned int a, unsigned int b, unsigned int c) {                             \
        using namespace cuforge_cpu_math;                                                                        \
        return EXPR(unsigned int, a, b, c);                                                                      \
    }                                                                                                            \
    inline unsigned int NAME##_s16x2(unsigned int a, unsigned int b, unsigned int c) {                           \
        using namespace cuforge_cpu_math;                                                                        \
        return simd_map3<16, true>(a, b, c, [](int x, int y, int z) { return EXPR(int, x, y, z); });            \
    }                                                                                                            \
    inline unsigned int NAME##_u16x2(unsigned int a, unsigned int b, unsigned int c) {                           \
        using namespace cuforge_cpu_math;                                                                        \
        return simd_map3<16, false>(a, b, c, [](int x, int y, int z) { return EXPR(int, x, y, z); });           \
    }
#define CF_MAX3(T, x, y, z) dpx_max<T>(dpx_max<T>(x, y), z)
#define CF_MIN3(T, x, y, z) dpx_min<T>(dpx_min<T>(x, y), z)
CF_DPX3(__vimax3, CF_MAX3)
CF_DPX3(__vimin3, CF_MIN3)
#undef CF_DPX3
#undef CF_MAX3
#undef CF_MIN3
// Adds then max or min: a 16-bit lane's sum wraps at 16 bits.
inline int __viaddmax_s32(int a, int b, int c) { using namespace cuforge_cpu_math; return dpx_max(wrap_add(a, b), c); }
inline int __viaddmin_s32(int a, int b, int c) { using namespace cuforge_cpu_math; return dpx_min(wrap_add(a, b), c); }
inline unsigned int __viaddmax_u32(unsigned int a, unsigned int b, unsigned int c) { return a + b > c ? a + b : c; }
inline unsigned int __viaddmin_u32(unsigned int a, unsigned int b, unsigned int c) { return a + b < c ? a + b : c; }
inline unsigned int __viaddmax_s16x2(unsigned int a, unsigned int b, unsigned int c) {
    using namespace cuforge_cpu_math;
    return simd_map3<16, true>(a, b, c, [](int x, int y, int z) { return dpx_max(wrap16(x + y), z); });
}
inline unsigned int __viaddmin_s16x2(unsigned int a, unsigned int b, unsigned int c) {
    using namespace cuforge_cpu_math;
    return simd_map3<16, true>(a, b, c, [](int x, int y, int z) { return dpx_min(wrap16(x + y), z); });
}
inline unsigned int __viaddmax_u16x2(unsigned int a, unsigned int b, unsigned int c) {
    using namespace cuforge_cpu_math;
    return simd_map3<16, false>(a, b, c, [](int x, int y, int z) { return dpx_max((x + y) & 0xffff, z); });
}
inline unsigned int __viaddmin_u16x2(unsigned int a, unsigned int b, unsigned int c) {
    using namespace cuforge_cpu_math;
    return simd_map3<16, false>(a, b, c, [](int x, int y, int z) { return dpx_min((x + y) & 0xffff, z); });
}
// With a ReLU: the result's floor is 0 (signed only).
inline int __vimax_s32_relu(int a, int b) { return cuforge_cpu_math::dpx_max(cuforge_cpu_math::dpx_max(a, b), 0); }
inline int __vimin_s32_relu(int a, int b) { return cuforge_cpu_math::dpx_max(cuforge_cpu_math::dpx_min(a, b), 0); }
inline int __vimax3_s32_relu(int a, int b, int c) { return __vimax_s32_relu(__vimax3_s32(a, b, c), 0); }
inline int __vimin3_s32_relu(int a, int b, int c) { return __vimax_s32_relu(__vimin3_s32(a, b, c), 0); }
inline int __viaddmax_s32_relu(int a, int b, int c) { return __vimax_s32_relu(__viaddmax_s32(a, b, c), 0); }
inline int __viaddmin_s32_relu(int a, int b, int c) { return __vimax_s32_relu(__viaddmin_s32(a, b, c), 0); }
inline unsigned int __vimax_s16x2_relu(unsigned int a, unsigned int b) { return __vimax3_s16x2(a, b, 0u); }
inline unsigned int __vimin_s16x2_relu(unsigned int a, unsigned int b) { return __vimax3_s16x2(__vmins2(a, b), 0u, 0u); }
inline unsigned int __vimax3_s16x2_relu(unsigned int a, unsigned int b, unsigned int c) { return __vimax3_s16x2(__vimax3_s16x2(a, b, c), 0u, 0u); }
inline unsigned int __vimin3_s16x2_relu(unsigned int a, unsigned int b, unsigned int c) { return __vimax3_s16x2(__vimin3_s16x2(a, b, c), 0u, 0u); }
inline unsigned int __viaddmax_s16x2_relu(unsigned int a, unsigned int b, unsigned int c) { return __vimax3_s16x2(__viaddmax_s16x2(a, b, c), 0u, 0u); }
inline unsigned int __viaddmin_s16x2_relu(unsigned int a, unsigned int b, unsigned int c) { return __vimax3_s16x2(__viaddmin_s16x2(a, b, c), 0u, 0u); }
// Max or min, and which operand won: *pred = a >= b (max) or a <= b (min); per half, *pred_hi and *pred_lo.
inline int __vibmax_s32(int a, int b, bool* pred) { *pred = a >= b; return a >= b ? a : b; }
inline unsigned int __vibmax_u32(unsigned int a, unsigned int b, bool* pred) { *pred = a >= b; return a >= b ? a : b; }
inline int __vibmin_s32(int a, int b, bool* pred) { *pred = a <= b; return a <= b ? a : b; }
inline unsigned int __vibmin_u32(unsigned int a, unsigned int b, bool* pred) { *pred = a <= b; return a <= b ? a : b; }
#define CF_VIB16(NAME, SIGNED, CMP)                                                                             \
    inline unsigned int NAME(unsigned int a, unsigned int b, bool* pred_hi, bool* pred_lo) {                    \
        using L = cuforge_cpu_math::simd_lane<16, SIGNED>;                                                       \
        *pred_hi = L::get(a, 1) CMP L::get(b, 1), *pred_lo = L::get(a, 0) CMP L::get(b, 0);                      \
        return cuforge_cpu_math::simd_map<16, SIGNED>(a, b, [](int x, int y) { return x CMP y ? x : y; });       \
    }
CF_VIB16(__vibmax_s16x2, true, >=)
CF_VIB16(__vibmax_u16x2, false, >=)
CF_VIB16(__vibmin_s16x2, true, <=)
CF_VIB16(__vibmin_u16x2, false, <=)
#undef CF_VIB16

// ---------------------------------------------------------------- type punning
inline int __float_as_int(float x) { return cuforge_cpu_math::bit_cast<int>(x); }
inline float __int_as_float(int x) { return cuforge_cpu_math::bit_cast<float>(x); }
inline unsigned int __float_as_uint(float x) { return cuforge_cpu_math::bit_cast<unsigned int>(x); }
inline float __uint_as_float(unsigned int x) { return cuforge_cpu_math::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return cuforge_cpu_math::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return cuforge_cpu_math::bit_cast<double>(x); }
inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return (int)(unsigned int)__double_as_longlong(x); }
inline double __hiloint2double(int hi, int lo) {
    return __longlong_as_double((long long)(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo));
}

// ---------------------------------------------------------------- cache-hinted loads and stores
// Host memory has no such caches: each is the plain load or store. A checked build's __ldg tells
// the checker first (a read through the non-coherent cache of data the kernel writes is a bug).
#ifdef CUFORGE_CPU_CHECK
extern "C" __attribute__((visibility("default"))) void cuforge_check_noncoherent(const void* p, unsigned long bytes);
template <class T> inline T __ldg(const T* p) {
    cuforge_check_noncoherent(p, sizeof(T));
    return *p;
}
#else
template <class T> inline T __ldg(const T* p) { return *p; }
#endif
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }
