// cuforge/cpu_atomic.h: CUDA's atomics, memory fences, clock64 and __nanosleep for the host
// (included by cuforge/cpu_math.h).
//
// Global and shared memory are both ordinary host memory here, so every atomic works on any
// address. Each returns the old value. CUDA's atomics are relaxed; so are these (a fence orders
// them, as on a GPU). Operations with no builtin are compare-and-swap loops on the value's
// bytes. The _system forms behave as the plain one: one host is one system. The _block forms
// and __threadfence_block() are marked with the consume order (relaxed on x86, as the others):
// a checked build's checker (cuforge/_cpu/check.cpp) reads the mark as the block's scope, whose
// atomics and fences order nothing for other blocks.
#pragma once
#include <cstdint>

#define CF_BLOCK_SCOPE __ATOMIC_CONSUME

namespace cuforge_cpu_math {

// Replace *p with f(*p) atomically; return the old value.
template <int Order = __ATOMIC_RELAXED, class T, class F> inline T atomic_update(T* p, F f) {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    for (;;) {
        T desired = f(old);
        if (__atomic_compare_exchange(p, &old, &desired, true, Order, __ATOMIC_RELAXED)) return old;
    }
}

}  // namespace cuforge_cpu_math

// A thread that updates one address again and again (atomicAdd(&flag, 0), atomicCAS in a loop)
// may be waiting for another thread of its block to change it: every 64 such atomics in a row,
// the block's other threads run, as a GPU runs them meanwhile (without, a spin on a flag another
// thread of the block sets would never end). A checked build's checker does this for every atomic
// and volatile load itself (cuforge/_cpu/check.cpp).
#if defined(CUFORGE_CPU) && !defined(CUFORGE_CPU_CHECK)
namespace cuforge_cpu_math {
inline void polled(const void* p) {
    cuforge_cpu::Worker& w = cuforge_cpu::worker();
    if (w.poll_at != p || w.poll_thread != w.cur) {
        w.poll_at = p, w.poll_thread = w.cur, w.polls = 0;
        return;
    }
    if (++w.polls < 64) return;
    w.polls = 0;
    cuforge_cpu::yield_now();
}
}  // namespace cuforge_cpu_math
#define CF_POLL(p) cuforge_cpu_math::polled(p)
#else
#define CF_POLL(p) ((void)0)
#endif

#define CF_SYSTEM_SCOPE(R, NAME, PARAMS, ARGS)                               \
    inline R NAME##_system PARAMS { return NAME ARGS; }
#define CF_ATOMIC_FETCH(NAME, T, BUILTIN)                              \
    inline T NAME(T* p, T v) { CF_POLL(p); return BUILTIN(p, v, __ATOMIC_RELAXED); } \
    inline T NAME##_block(T* p, T v) { CF_POLL(p); return BUILTIN(p, v, CF_BLOCK_SCOPE); } \
    CF_SYSTEM_SCOPE(T, NAME, (T * p, T v), (p, v))
#define CF_ATOMIC_UPDATE(NAME, T, EXPR)                                \
    inline T NAME(T* p, T v) {                                         \
        CF_POLL(p);                                                    \
        return cuforge_cpu_math::atomic_update(p, [v](T old) { return EXPR; }); \
    }                                                                  \
    inline T NAME##_block(T* p, T v) {                                 \
        CF_POLL(p);                                                    \
        return cuforge_cpu_math::atomic_update<CF_BLOCK_SCOPE>(p, [v](T old) { return EXPR; }); \
    }                                                                  \
    CF_SYSTEM_SCOPE(T, NAME, (T * p, T v), (p, v))

CF_ATOMIC_FETCH(atomicAdd, int, __atomic_fetch_add)
CF_ATOMIC_FETCH(atomicAdd, unsigned int, __atomic_fetch_add)
CF_ATOMIC_FETCH(atomicAdd, unsigned long long, __atomic_fetch_add)
CF_ATOMIC_UPDATE(atomicAdd, float, old + v)
CF_ATOMIC_UPDATE(atomicAdd, double, old + v)
CF_ATOMIC_UPDATE(atomicAdd, __half, __hadd(old, v))
CF_ATOMIC_UPDATE(atomicAdd, __half2, __hadd2(old, v))
CF_ATOMIC_UPDATE(atomicAdd, __nv_bfloat16, __hadd(old, v))
CF_ATOMIC_UPDATE(atomicAdd, __nv_bfloat162, __hadd2(old, v))
// float2 and float4 (sm_90): atomic per component, as on a GPU.
inline float2 atomicAdd(float2* p, float2 v) { return make_float2(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y)); }
inline float4 atomicAdd(float4* p, float4 v) {
    return make_float4(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z), atomicAdd(&p->w, v.w));
}
inline float2 atomicAdd_block(float2* p, float2 v) { return make_float2(atomicAdd_block(&p->x, v.x), atomicAdd_block(&p->y, v.y)); }
inline float4 atomicAdd_block(float4* p, float4 v) {
    return make_float4(atomicAdd_block(&p->x, v.x), atomicAdd_block(&p->y, v.y), atomicAdd_block(&p->z, v.z),
                       atomicAdd_block(&p->w, v.w));
}
CF_SYSTEM_SCOPE(float2, atomicAdd, (float2 * p, float2 v), (p, v))
CF_SYSTEM_SCOPE(float4, atomicAdd, (float4 * p, float4 v), (p, v))

CF_ATOMIC_FETCH(atomicSub, int, __atomic_fetch_sub)
CF_ATOMIC_FETCH(atomicSub, unsigned int, __atomic_fetch_sub)

#define CF_ATOMIC_EXCH(T)                                                                   \
    inline T atomicExch(T* p, T v) {                                                        \
        CF_POLL(p);                                                                         \
        T old;                                                                              \
        __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);                                   \
        return old;                                                                         \
    }                                                                                       \
    inline T atomicExch_block(T* p, T v) {                                                  \
        CF_POLL(p);                                                                         \
        T old;                                                                              \
        __atomic_exchange(p, &v, &old, CF_BLOCK_SCOPE);                                     \
        return old;                                                                         \
    }                                                                                       \
    CF_SYSTEM_SCOPE(T, atomicExch, (T * p, T v), (p, v))
CF_ATOMIC_EXCH(int)
CF_ATOMIC_EXCH(unsigned int)
CF_ATOMIC_EXCH(unsigned long long)
CF_ATOMIC_EXCH(float)
#undef CF_ATOMIC_EXCH

#define CF_ATOMIC_MINMAX(T)                                      \
    CF_ATOMIC_UPDATE(atomicMin, T, v < old ? v : old)            \
    CF_ATOMIC_UPDATE(atomicMax, T, v > old ? v : old)
CF_ATOMIC_MINMAX(int)
CF_ATOMIC_MINMAX(unsigned int)
CF_ATOMIC_MINMAX(long long)
CF_ATOMIC_MINMAX(unsigned long long)
#undef CF_ATOMIC_MINMAX

// atomicInc: old >= val ? 0 : old + 1. atomicDec: (old == 0 || old > val) ? val : old - 1.
CF_ATOMIC_UPDATE(atomicInc, unsigned int, old >= v ? 0u : old + 1u)
CF_ATOMIC_UPDATE(atomicDec, unsigned int, (old == 0u || old > v) ? v : old - 1u)

#define CF_ATOMIC_BITS(T)                                        \
    CF_ATOMIC_FETCH(atomicAnd, T, __atomic_fetch_and)            \
    CF_ATOMIC_FETCH(atomicOr, T, __atomic_fetch_or)              \
    CF_ATOMIC_FETCH(atomicXor, T, __atomic_fetch_xor)
CF_ATOMIC_BITS(int)
CF_ATOMIC_BITS(unsigned int)
CF_ATOMIC_BITS(long long)
CF_ATOMIC_BITS(unsigned long long)
#undef CF_ATOMIC_BITS

#define CF_ATOMIC_CAS(T)                                                                     \
    inline T atomicCAS(T* p, T compare, T v) {                                               \
        CF_POLL(p);                                                                          \
        __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
        return compare;                                                                      \
    }                                                                                        \
    inline T atomicCAS_block(T* p, T compare, T v) {                                         \
        CF_POLL(p);                                                                          \
        __atomic_compare_exchange_n(p, &compare, v, false, CF_BLOCK_SCOPE, __ATOMIC_RELAXED); \
        return compare;                                                                      \
    }                                                                                        \
    CF_SYSTEM_SCOPE(T, atomicCAS, (T * p, T c, T v), (p, c, v))
CF_ATOMIC_CAS(int)
CF_ATOMIC_CAS(unsigned int)
CF_ATOMIC_CAS(unsigned long long)
CF_ATOMIC_CAS(unsigned short)
#undef CF_ATOMIC_CAS

#undef CF_ATOMIC_UPDATE
#undef CF_ATOMIC_FETCH
#undef CF_SYSTEM_SCOPE

// ---------------------------------------------------------------- fences, time
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(CF_BLOCK_SCOPE); }  // (a block's threads share a host thread)
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// A monotonic tick count (the x86 time-stamp counter), as the GPU's SM clock counts cycles.
// clock() stays <ctime>'s (processor time), which also only grows.
inline long long clock64() { return (long long)__builtin_ia32_rdtsc(); }

// A pause of the order of ns. It yields no other CUDA thread: a spin-wait on a thread of the
// same block never sees that thread move.
#ifdef CUFORGE_CPU  // in a kernel: the block's other threads run meanwhile (cuforge_cpu.h)
inline void __nanosleep(unsigned int) { cuforge_cpu::yield_now(); }
#else
inline void __nanosleep(unsigned int ns) {
    for (unsigned int i = 0; i < ns / 32u + 1u; ++i) __builtin_ia32_pause();
}
#endif
