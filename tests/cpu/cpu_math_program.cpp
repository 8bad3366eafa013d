// The program tests/cpu/test_cpu_math.py compiles against cuforge/cpu_math.h and runs. Each
// output line is `key token...`: its inputs, then its results, so that the test computes the
// expected values from the very inputs. Floats print as C99 hex floats (exact), integers in
// decimal, __half as h<bits>, __nv_bfloat16 as b<bits>. The prologue before the include is
// what cuforge_cpu.h sets up before it includes cpu_math.h.
#include <crt/host_defines.h>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector_types.h>
#include "cuforge/cpu_math.h"

#include <algorithm>
#include <thread>
#include <vector>

static void put(float v) { printf(" %a", double(v)); }
static void put(double v) { printf(" %a", v); }
static void put(bool v) { printf(" %d", int(v)); }
static void put(int v) { printf(" %d", v); }
static void put(short v) { printf(" %d", int(v)); }
static void put(unsigned short v) { printf(" %u", unsigned(v)); }
static void put(unsigned v) { printf(" %u", v); }
static void put(long long v) { printf(" %lld", v); }
static void put(unsigned long long v) { printf(" %llu", v); }
static void put(__half v) { printf(" h%u", unsigned(__half_as_ushort(v))); }
static void put(__nv_bfloat16 v) { printf(" b%u", unsigned(__bfloat16_as_ushort(v))); }
template <class... T> static void line(const char* key, T... v) {
    printf("%s", key);
    (put(v), ...);
    printf("\n");
}

// ---------------------------------------------------------------- types CUDA's headers give
static_assert(std::is_same<decltype(min(1, 2u)), unsigned>::value, "min(int, unsigned) is unsigned");
static_assert(std::is_same<decltype(max(2u, -1)), unsigned>::value, "max(unsigned, int) is unsigned");
static_assert(std::is_same<decltype(min(1LL, 2ULL)), unsigned long long>::value, "");
static_assert(std::is_same<decltype(max(1, 2)), int>::value, "");
static_assert(std::is_same<decltype(min(1.0f, 2.0f)), float>::value, "");
static_assert(std::is_same<decltype(max(1.0f, 2.0)), double>::value, "");
static_assert(std::is_same<decltype(min(3LL, 4LL)), long long>::value, "");
static_assert(std::is_same<decltype(sqrt(1.0f)), float>::value, "sqrt(float) is the float function");
static_assert(std::is_same<decltype(exp(1.0f)), float>::value, "");
static_assert(std::is_same<decltype(pow(1.0f, 2.0f)), float>::value, "");
static_assert(std::is_same<decltype(isnan(1.0f)), bool>::value, "");
static_assert(std::is_same<decltype(std::min(3, 4)), const int&>::value, "std::min untouched");
static int with_std_namespace() {
    using namespace std;
    return min(3, 4) + max(3, 4);  // CUDA's non-template overloads win over std's templates
}

static const float FX[] = {0.0f, -0.0f, 0.5f, 1.0f, -1.5f, 2.75f, 10.0f, 88.5f, 1e-3f, 1e-40f, -1e-40f,
                           3.0e38f, INFINITY, -INFINITY, NAN, 0.7f, -0.3f, 123.456f};
static const float FPAIR[][2] = {{2.0f, 10.0f}, {-3.5f, 2.0f}, {0.0f, -0.0f}, {1.0f, NAN}, {NAN, 1.0f}, {INFINITY, 2.0f},
                                 {7.25f, -2.5f}, {-7.25f, 0.75f}, {1e-40f, 3.0f}, {5.0f, 0.5f}, {-0.0f, 0.0f}};

static void float_math() {
    for (float x : FX) {
        line("f1", x, expf(x), logf(x), sinf(x), cosf(x), tanf(x), sqrtf(x), fabsf(x), floorf(x), ceilf(x), roundf(x),
             truncf(x), exp2f(x), log2f(x), log10f(x), expm1f(x), log1pf(x), sinhf(x), coshf(x), tanhf(x), asinf(x),
             acosf(x), atanf(x), cbrtf(x), erff(x), erfcf(x), lgammaf(x), tgammaf(x), nearbyintf(x), rintf(x));
        line("f1o", x, exp(x), log(x), sin(x), sqrt(x), fabs(x), floor(x), tanh(x), abs(x));  // the float overloads
        line("cls", x, isnan(x), isinf(x), isfinite(x), signbit(x), isnan(double(x)), isinf(double(x)),
             isfinite(double(x)), signbit(double(x)));
        line("cu1", x, rsqrtf(x), rsqrt(double(x)), rcbrtf(x), exp10f(x), __saturatef(x), saturate(x), __frcp_rn(x),
             __fsqrt_rn(x), __frsqrt_rn(x), __drcp_rn(double(x)), __dsqrt_rn(double(x)));
        line("fast", x, __expf(x), __logf(x), __sinf(x), __cosf(x), __tanf(x), __exp10f(x), __log2f(x), __log10f(x));
        float s, c, sp, cp, s2, c2;
        sincosf(x, &s, &c);
        sincospif(x, &sp, &cp);
        __sincosf(x, &s2, &c2);
        line("sc", x, s, c, sp, cp, sinpif(x), cospif(x), s2, c2);
        if (std::isfinite(x) && std::fabs(x) < 1e6f) line("lr", x, int(lrintf(x)), (long long)llrintf(x));
        int e;
        float ip, m = frexpf(x, &e), fr = modff(x, &ip);
        line("fx", x, m, e, fr, ip, ldexpf(x, 3), ldexpf(x, -130));
    }
    for (auto& p : FPAIR) {
        float a = p[0], b = p[1];
        line("f2", a, b, powf(a, b), fminf(a, b), fmaxf(a, b), fmodf(a, b), atan2f(a, b), hypotf(a, b), copysignf(a, b),
             remainderf(a, b), fdimf(a, b), min(a, b), max(a, b), pow(a, b));
        line("rn", a, b, __fadd_rn(a, b), __fsub_rn(a, b), __fmul_rn(a, b), __fdiv_rn(a, b), __fdividef(a, b),
             fdividef(a, b), __powf(a, b), rhypotf(a, b), __dadd_rn(double(a), double(b)), __dmul_rn(double(a), double(b)),
             __dsub_rn(double(a), double(b)), __ddiv_rn(double(a), double(b)));
    }
    // a*a - c: fused gives the exact 2^-24, unfused 0; the _rn intrinsics must never be fused
    volatile float va = 1.0f + 0x1p-12f, vc = 1.0f + 0x1p-11f;
    float a = va, c = vc;
    line("fma", a, c, __fmaf_rn(a, a, -c), fmaf(a, a, -c), __fadd_rn(__fmul_rn(a, a), -c), __fma_rn(double(a), double(a), -double(c)),
         fma(double(a), double(a), -double(c)));
    const float v4[] = {3.0f, 4.0f, 12.0f, 84.0f};
    line("norm", norm3df(3, 4, 12), rnorm3df(3, 4, 12), norm4df(3, 4, 12, 84), rnorm4df(3, 4, 12, 84), normf(4, v4),
         rnormf(4, v4), norm3d(3, 4, 12), rnorm3d(3, 4, 12), rhypot(3.0, 4.0));
    for (double d : {0.25, 0.5, 1.0, 1.5, 2.0, -0.5, -1.0, -2.5, 1e20, 0.125, 0.0, -0.0}) {
        double s, c;
        sincospi(d, &s, &c);
        line("pi", d, s, c, sinpi(d), cospi(d), exp10(d));
    }
}

static void min_max() {
    line("mm", min(-1, 1u), max(-1, 1u), min(1u, -1), min(-5, 3), max(-5, 3), min(-1LL, 1ULL), max(-1LL, 1ULL),
         min(INT_MIN, INT_MAX), min(1.0f, NAN), max(NAN, 1.0f), min(2.0f, 1.0), max(-0.5, 0.25f), umin(3u, 4u),
         umax(3u, 4u), llmin(-3LL, 4LL), llmax(-3LL, 4LL), ullmin(3ULL, 4ULL), ullmax(3ULL, ~0ULL), with_std_namespace(),
         std::min(3, 4), std::max(1.5f, 2.5f));
}

static void integer_intrinsics() {
    const unsigned U[] = {0u, 1u, 0x80000000u, 0xFFFFFFFFu, 0x12345678u, 0x00F000F0u, 0x7FFFFFFFu};
    for (unsigned u : U)
        line("i32", u, __popc(u), __clz(int(u)), __ffs(int(u)), __brev(u), __float_as_int(__uint_as_float(u)),
             __float_as_uint(__int_as_float(int(u))));
    const unsigned long long W[] = {0ull, 1ull, 1ull << 63, ~0ull, 0x0123456789ABCDEFull, 0x00000000FFFFFFFFull};
    for (unsigned long long w : W)
        line("i64", w, __popcll(w), __clzll((long long)w), __ffsll((long long)w), __brevll(w),
             (unsigned long long)__double_as_longlong(__longlong_as_double((long long)w)));
    const unsigned SEL[] = {0x3210u, 0x7654u, 0x0123u, 0x4567u, 0x1111u, 0x7777u, 0x5140u, 0x0000u, 0x8888u, 0x9B1Fu};
    for (unsigned s : SEL) line("perm", 0x33221100u, 0x77665544u, s, __byte_perm(0x33221100u, 0x77665544u, s));
    line("perm", 0x8000F07Fu, 0x01FF8023u, 0x89ABu, __byte_perm(0x8000F07Fu, 0x01FF8023u, 0x89ABu));
    const unsigned SH[] = {0u, 1u, 4u, 31u, 32u, 33u, 40u, 63u, 64u, 0xFFFFFFFFu};
    for (unsigned s : SH)
        line("fsh", 0x89ABCDEFu, 0x01234567u, s, __funnelshift_l(0x89ABCDEFu, 0x01234567u, s),
             __funnelshift_lc(0x89ABCDEFu, 0x01234567u, s), __funnelshift_r(0x89ABCDEFu, 0x01234567u, s),
             __funnelshift_rc(0x89ABCDEFu, 0x01234567u, s));
    const int I[][2] = {{INT_MIN, INT_MIN}, {INT_MAX, INT_MAX}, {INT_MIN, INT_MAX}, {-1, 0}, {-1, 1}, {0x00FFFFFF, 2},
                        {0x7FFFFF, 0x7FFFFF}, {-7, 3}, {0x12345678, -0x6543210}, {0, 0}};
    for (auto& p : I) {
        int x = p[0], y = p[1];
        unsigned ux = unsigned(x), uy = unsigned(y);
        line("imul", x, y, __mulhi(x, y), __umulhi(ux, uy), __mul24(x, y), __umul24(ux, uy), __sad(x, y, 1u),
             __usad(ux, uy, 1u), __hadd(x, y), __rhadd(x, y), __uhadd(ux, uy), __urhadd(ux, uy));
    }
    const long long L[][2] = {{LLONG_MIN, -1}, {LLONG_MIN, LLONG_MIN}, {LLONG_MAX, LLONG_MAX}, {-1, -1}, {0x123456789LL, -0x987654321LL}};
    for (auto& p : L)
        line("i128", p[0], p[1], __mul64hi(p[0], p[1]),
             __umul64hi((unsigned long long)p[0], (unsigned long long)p[1]));
    line("dpun", 1.0, __double2hiint(1.0), __double2loint(1.0), __double2hiint(-0.1), __double2loint(-0.1),
         __hiloint2double(0x3FF00000, 0), __hiloint2double(int(0xBFB99999), int(0x9999999A)));
    int g[3] = {7, 8, 9};
    float gf = 2.5f;
    __stcg(&g[0], 11);
    __stcs(&g[1], 12);
    __stwb(&g[2], 13);
    __stwt(&gf, 3.5f);
    line("ld", __ldg(&g[0]), __ldcg(&g[1]), __ldca(&g[2]), __ldcs(&g[0]), __ldlu(&g[1]), __ldcv(&g[2]), __ldg(&gf));
}

static void conversions() {
    const float F[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.7f, -2.7f, -0.0f, 1e10f, -1e10f, 3e9f, -3e9f,
                       2147483520.0f, 2147483648.0f, -2147483648.0f, 4294967040.0f, 4294967296.0f, 9.2233715e18f,
                       9.223372e18f, -9.223372e18f, 1.8446743e19f, 1.8446744e19f, INFINITY, -INFINITY, NAN, 1e-45f};
    for (float x : F) {
        line("f2i", x, __float2int_rn(x), __float2int_rz(x), __float2int_ru(x), __float2int_rd(x), __float2uint_rn(x),
             __float2uint_rz(x), __float2uint_ru(x), __float2uint_rd(x));
        line("f2l", x, __float2ll_rn(x), __float2ll_rz(x), __float2ll_ru(x), __float2ll_rd(x), __float2ull_rn(x),
             __float2ull_rz(x), __float2ull_ru(x), __float2ull_rd(x));
        double d = double(x) * 1.0000001;
        line("d2i", d, __double2int_rn(d), __double2int_rz(d), __double2int_ru(d), __double2int_rd(d),
             __double2uint_rn(d), __double2uint_rz(d), __double2uint_ru(d), __double2uint_rd(d));
        line("d2l", d, __double2ll_rn(d), __double2ll_rz(d), __double2ll_ru(d), __double2ll_rd(d), __double2ull_rn(d),
             __double2ull_rz(d), __double2ull_ru(d), __double2ull_rd(d));
    }
    const long long N[] = {0, 1, -1, 16777217, -16777217, 16777219, 33554435, -33554435, INT_MAX, INT_MIN, LLONG_MAX,
                           LLONG_MIN, 9007199254740993LL, -9007199254740995LL, 0x7FFFFF7FFFFFFFFFLL};
    for (long long n : N) {
        line("l2f", n, __ll2float_rn(n), __ll2float_rz(n), __ll2float_ru(n), __ll2float_rd(n), __ll2double_rn(n),
             __ll2double_rz(n), __ll2double_ru(n), __ll2double_rd(n));
        unsigned long long u = (unsigned long long)n;
        line("u2f", u, __ull2float_rn(u), __ull2float_rz(u), __ull2float_ru(u), __ull2float_rd(u), __ull2double_rn(u),
             __ull2double_rz(u), __ull2double_ru(u), __ull2double_rd(u));
        int i = int(n);
        line("i2f", i, __int2float_rn(i), __int2float_rz(i), __int2float_ru(i), __int2float_rd(i), __int2double_rn(i));
        unsigned ui = unsigned(n);
        line("ui2f", ui, __uint2float_rn(ui), __uint2float_rz(ui), __uint2float_ru(ui), __uint2float_rd(ui),
             __uint2double_rn(ui));
    }
    const double D[] = {1.0 / 3, -1.0 / 3, 0.1, 1e300, -1e300, 3.4028235677973366e38, 3.40282356e38, 1e-46, -1e-46,
                        1e-40, 7e-46, 1.0, INFINITY, NAN, -0.0};
    for (double d : D) line("d2f", d, __double2float_rn(d), __double2float_rz(d), __double2float_ru(d), __double2float_rd(d));
}

static void halves() {
    const float F[] = {0.0f, -0.0f, 1.0f, 0.1f, -2.5f, 65504.0f, 65520.0f, 1e5f, 6e-8f, 3e-8f, 1e-3f, 3.14159f, 1.00048828125f,
                       1.0009765625f, 2.5f, 3.5f, -0.5f, 300.7f, INFINITY, -INFINITY, NAN, 1e30f, 1.0078125f};
    for (float x : F) {
        __half h = __float2half(x);
        __nv_bfloat16 b = __float2bfloat16(x);
        line("hcv", x, h, b, __half2float(h), __bfloat162float(b), __half2int_rn(h), __half2int_ru(h), __half2int_rd(h),
             __half2uint_rn(h), __half2short_rn(h), __half2short_ru(h), __half2ushort_rd(h), __half2ll_rn(h),
             __half2ull_ru(h), __bfloat162int_rn(b), __bfloat162int_ru(b), __bfloat162short_rd(b), __bfloat162ll_rn(b),
             __bfloat162ull_rd(b), __bfloat162ushort_rn(b), __bfloat162uint_ru(b));
        line("hmath", h, hsqrt(h), hrsqrt(h), hrcp(h), hexp(h), hexp2(h), hexp10(h), hlog(h), hlog2(h), hlog10(h), hsin(h),
             hcos(h), htanh(h), hceil(h), hfloor(h), hrint(h), htrunc(h));
        line("bmath", b, hsqrt(b), hrsqrt(b), hrcp(b), hexp(b), hexp2(b), hexp10(b), hlog(b), hlog2(b), hlog10(b), hsin(b),
             hcos(b), htanh(b), hceil(b), hfloor(b), hrint(b), htrunc(b));
        for (float y : {3.0f, -0.375f, 1e-4f}) {
            __half g = __float2half(y);
            __nv_bfloat16 c = __float2bfloat16(y);
            line("harith", h, g, __half(h + g), __half(h - g), __half(h * g), __half(h / g), __hadd(h, g), __hmul(h, g),
                 bool(h < g), __hmax(h, g));
            line("barith", b, c, __nv_bfloat16(b + c), __nv_bfloat16(b - c), __nv_bfloat16(b * c), __nv_bfloat16(b / c),
                 __hadd(b, c), __hmul(b, c), bool(b < c));
        }
    }
    // fused multiply-adds, among them products exactly halfway between two 16-bit values
    const float T[][3] = {{1.03125f, 1.015625f, 0x1p-24f}, {1.03125f, 1.015625f, -0x1p-24f}, {1.03125f, 1.015625f, 0.0f},
                          {1.0625f, 1.0625f, 0x1p-100f}, {1.0625f, 1.0625f, -0x1p-100f}, {1.0625f, 1.0625f, 0.0f},
                          {3.0f, -0.375f, 0.1f}, {100.0f, 700.0f, -1.0f}, {0.5f, 0.5f, -0.25f}, {0.7f, 0.9f, 0.3f},
                          {-2.0f, 0.75f, 1.0f}, {NAN, 1.0f, 1.0f}, {60000.0f, 2.0f, -60000.0f}};
    for (auto& t : T) {
        __half a = __float2half(t[0]), b = __float2half(t[1]), c = __float2half(t[2]);
        __nv_bfloat16 p = __float2bfloat16(t[0]), q = __float2bfloat16(t[1]), r = __float2bfloat16(t[2]);
        __half2 f2 = __hfma2(__halves2half2(a, b), __halves2half2(b, a), __halves2half2(c, c));
        line("hfma", a, b, c, __hfma(a, b, c), __hfma_sat(a, b, c), __hfma_relu(a, b, c), f2.x, f2.y);
        line("bfma", p, q, r, __hfma(p, q, r), __hfma_sat(p, q, r), __hfma_relu(p, q, r));
    }
    const long long N[] = {0, 1, 255, 257, -257, 16777217, -16777217, INT_MAX, INT_MIN, 100000};
    for (long long n : N)
        line("i2bf", n, __int2bfloat16_rz(int(n)), __int2bfloat16_ru(int(n)), __int2bfloat16_rd(int(n)),
             __ll2bfloat16_ru(n), __ll2bfloat16_rd(n), __uint2bfloat16_ru(unsigned(n)), __ull2bfloat16_rz((unsigned long long)n),
             __short2bfloat16_ru(short(n)), __ushort2bfloat16_rd((unsigned short)n));
}

template <class F> static void threads(F f) {
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) ts.emplace_back(f, t);
    for (auto& t : ts) t.join();
}

static void atomics() {
    float fsum = 0;
    double dsum = 0;
    int isum = 0;
    unsigned usub = 400000u, inc = 0, ormask = 0, xmask = 0;
    unsigned long long usum = 0, cas_count = 0;
    long long lmax = LLONG_MIN, lmin = LLONG_MAX;
    __half hsum = __float2half(0.0f);
    __half2 h2sum = __floats2half2_rn(0.0f, 0.0f);
    __nv_bfloat16 bsum = __float2bfloat16(0.0f);
    __nv_bfloat162 b2sum = __floats2bfloat162_rn(0.0f, 0.0f);
    float2 f2sum = make_float2(0, 0);
    float4 f4sum = make_float4(0, 0, 0, 0);
    threads([&](int t) {
        for (int i = 0; i < 100000; ++i) {
            atomicAdd(&fsum, 1.0f);
            atomicAdd_block(&dsum, 0.5);
            atomicAdd_system(&isum, 1);
            atomicSub(&usub, 1u);
            atomicAdd(&usum, 3ull);
            atomicInc(&inc, 9u);
            unsigned long long old = cas_count, seen;
            while ((seen = atomicCAS(&cas_count, old, old + 1)) != old) old = seen;
            atomicMax(&lmax, (long long)(i * 4 + t) - 300000);
            atomicMin_system(&lmin, (long long)(i * 4 + t) - 7);
        }
        for (int i = 0; i < 1000; ++i) {
            atomicAdd(&hsum, __float2half(1.0f));
            atomicAdd(&h2sum, __floats2half2_rn(1.0f, 0.5f));
            atomicAdd(&bsum, __float2bfloat16(1.0f));
            atomicAdd(&b2sum, __floats2bfloat162_rn(1.0f, 0.5f));
            atomicAdd(&f2sum, make_float2(1.0f, 2.0f));
            atomicAdd(&f4sum, make_float4(1.0f, 2.0f, 3.0f, 4.0f));
        }
        atomicOr(&ormask, 1u << (8 * t));
        for (int i = 0; i < 10; ++i) atomicXor_block(&xmask, 0xF0u << t);
    });
    line("athreads", fsum, dsum, isum, usub, usum, inc, cas_count, lmax, lmin, ormask, xmask);
    line("ahalf", hsum, h2sum.x, h2sum.y, bsum, b2sum.x, b2sum.y, f2sum.x, f2sum.y, f4sum.x, f4sum.y, f4sum.z, f4sum.w);

    // single-thread semantics: each returns the old value
    unsigned a = 5;
    unsigned r1 = atomicInc(&a, 5u), a1 = a;
    unsigned r2 = atomicInc(&a, 5u), a2 = a;
    a = 0;
    unsigned r3 = atomicDec(&a, 7u), a3 = a;
    a = 9;
    unsigned r4 = atomicDec_block(&a, 7u), a4 = a;
    a = 3;
    unsigned r5 = atomicDec_system(&a, 7u), a5 = a;
    line("aincdec", r1, a1, r2, a2, r3, a3, r4, a4, r5, a5);
    int i = 10;
    float f = 1.5f;
    unsigned long long u = 1;
    unsigned short s = 7;
    long long l = -5;
    int e1 = atomicExch(&i, 20), e2 = atomicCAS(&i, 19, 30), e3 = atomicCAS(&i, 20, 40);
    float e4 = atomicExch(&f, 2.5f);
    unsigned long long e5 = atomicExch_system(&u, ~0ull), e6 = atomicCAS_block(&u, ~0ull, 5ull);
    unsigned short e7 = atomicCAS(&s, (unsigned short)7, (unsigned short)65535), e8 = atomicCAS(&s, (unsigned short)7, (unsigned short)1);
    long long e9 = atomicAnd(&l, 0xFFLL), e10 = atomicOr(&l, 0x100LL), e11 = atomicXor(&l, 0x1FFLL);
    int e12 = atomicMin(&i, -3), e13 = atomicMax_block(&i, 2);
    unsigned e14 = atomicMax(&a, 100u), e15 = atomicMin(&a, 50u), e16 = atomicAnd_system(&a, 0x33u);
    line("aone", e1, e2, e3, i, e4, f, e5, e6, u, e7, e8, s, e9, e10, e11, l, e12, e13, e14, e15, e16, a);
    __threadfence();
    __threadfence_block();
    __threadfence_system();
    long long c0 = clock64();
    __nanosleep(1000);
    volatile double spin = 0;
    for (int k = 0; k < 100000; ++k) spin = spin + 1.0;
    long long c1 = clock64();
    line("clock", c0, c1);
}

int main() {
    float_math();
    min_max();
    integer_intrinsics();
    conversions();
    halves();
    atomics();
    return 0;
}
