// cuforge CPU backend: CUDA's <cuda_pipeline_primitives.h>, copies completed when they are waited
// for. Each __pipeline_memcpy_async is held in the calling thread's open batch; __pipeline_commit
// closes the batch; __pipeline_wait_prior(n) makes the copies of every batch committed before
// the n most recent ones (a GPU's cp.async completes at some time before that wait returns). So
// a read of the destination before its wait reads what was there, as it may on a GPU, and a
// checked launch reports it (the copy's writes are the waiting thread's, at its wait).
// Copies a thread never waits for are dropped at its block's end. CUDA's helpers (which
// <cuda_pipeline.h>'s classes use, copying at once) are CUDA's own, read without __CUDA_ARCH__.
#pragma once
#ifndef _CUDA_PIPELINE_PRIMITIVES_H_
#define _CUDA_PIPELINE_PRIMITIVES_H_
#include <cstddef>
#include <cstdlib>
#include <cstring>
#pragma push_macro("__CUDA_ARCH__")
#undef __CUDA_ARCH__
#include <cuda_pipeline_helpers.h>
#pragma pop_macro("__CUDA_ARCH__")

namespace cuforge_cpu_pipeline {
// A held copy: a __pipeline_memcpy_async's (a unit of 4, 8 or 16 bytes, the bytes past
// from_source zeroed), or a thread's share of a cooperative_groups::memcpy_async (`group`: what
// makes it, with the group's rank and size when it was issued, and its least unit), which CUDA
// makes a __pipeline_memcpy_async and a commit too: one queue for both, as on a GPU.
struct Copy {
    void* dst;
    const void* src;
    size_t size, from_source;
    unsigned long long batch;
    void (*group)(const Copy&);
    size_t rank, n, least;
};
// A CUDA thread's held copies. Only uninstrumented code (CF_RUNTIME) touches them, and a copy is
// made from its value: a checked build sees the copies' accesses at the wait, not this bookkeeping.
struct Pending {
    unsigned long long range;  // (cuforge_cpu::ranges_run when made: a launch's range of blocks)
    long long block;
    unsigned long long open;  // the batch __pipeline_commit closes next
    Copy* copies;
    size_t count, capacity;
};
struct Threads {  // a worker's CUDA threads' (its fibers index these), made on first use
    Pending* p = nullptr;
    CF_RUNTIME ~Threads() {
        if (!p) return;
        for (size_t i = 0; i < CUFORGE_CPU_MAX_THREADS; ++i) free(p[i].copies);
        free(p);
    }
};
// The calling CUDA thread's copies (a worker runs one block at a time).
CF_RUNTIME inline Pending& pending() {
    static thread_local Threads threads;
    if (!threads.p) threads.p = static_cast<Pending*>(calloc(CUFORGE_CPU_MAX_THREADS, sizeof(Pending)));
    if (!threads.p) cuforge_cpu::fail("out of memory for the asynchronous copies' records");
    cuforge_cpu::Worker& w = cuforge_cpu::worker();
    Pending& p = threads.p[w.cur];
    long long block = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
    if (p.range != cuforge_cpu::ranges_run || p.block != block)
        p.range = cuforge_cpu::ranges_run, p.block = block, p.open = 0, p.count = 0;
    return p;
}
CF_RUNTIME inline void hold(Pending& p, const Copy& c) {
    if (p.count == p.capacity) {
        size_t capacity = p.capacity ? 2 * p.capacity : 16;
        Copy* grown = static_cast<Copy*>(realloc(p.copies, capacity * sizeof(Copy)));
        if (!grown) cuforge_cpu::fail("out of memory for the asynchronous copies' records");
        p.copies = grown, p.capacity = capacity;
    }
    p.copies[p.count++] = c;
}
// The copy itself, in one access of its size where it copies all of it (a checked build checks
// that both addresses are aligned to it, as cp.async needs), else memcpy and memset; a checked
// build sees each as the access it makes.
template <unsigned N> struct alignas(N) cp_async_copy {
    unsigned char bytes[N];
};
template <unsigned N> inline void copy_unit(void* dst, const void* src) {
    *static_cast<cp_async_copy<N>*>(dst) = *static_cast<const cp_async_copy<N>*>(src);
}
inline void make(Copy c) {  // (by value: its fields are read from this thread's stack)
    if (c.group) return c.group(c);
    if (c.from_source == c.size && c.size == 16) return copy_unit<16>(c.dst, c.src);
    if (c.from_source == c.size && c.size == 8) return copy_unit<8>(c.dst, c.src);
    if (c.from_source == c.size && c.size == 4) return copy_unit<4>(c.dst, c.src);
    memcpy(c.dst, c.src, c.from_source);
    if (c.size > c.from_source) memset(static_cast<char*>(c.dst) + c.from_source, 0, c.size - c.from_source);
}
// The source is read where the copy is issued as it is read later (cp.async reads it at some time
// between the two), once with the copy's alignment: a checked build reports a misaligned one there.
template <unsigned N> inline void issue_read(const void* src) {
    cp_async_copy<N> probe = *static_cast<const cp_async_copy<N>*>(src);
    (void)probe;
}
}  // namespace cuforge_cpu_pipeline

CF_RUNTIME inline void __pipeline_memcpy_async(void* __restrict__ dst_shared, const void* __restrict__ src_global,
                                               size_t size_and_align, size_t zfill = 0) {
    if ((size_and_align != 4 && size_and_align != 8 && size_and_align != 16) || zfill > size_and_align)
        cuforge_cpu::fail(CF_BLOCK_FMT ": thread %u called __pipeline_memcpy_async with %zu bytes and zfill %zu; the size "
                          "must be 4, 8 or 16 and zfill at most the size", CF_BLOCK_ARGS, cuforge_cpu::worker().cur,
                          size_and_align, zfill);
    cuforge_cpu_pipeline::Pending& p = cuforge_cpu_pipeline::pending();
    cuforge_cpu_pipeline::hold(p, {dst_shared, src_global, size_and_align, size_and_align - zfill, p.open, nullptr, 0, 0, 0});
}
#ifdef CUFORGE_CPU_CHECK
// (the issue's read of the source, then the bookkeeping, which is cuforge's and not checked)
#define __pipeline_memcpy_async(dst, src, ...) cuforge_cpu_pipeline::issue(dst, src, __VA_ARGS__)
namespace cuforge_cpu_pipeline {
inline void issue(void* dst, const void* src, size_t size_and_align, size_t zfill = 0) {
    if (size_and_align == 16 && zfill == 0) issue_read<16>(src);
    if (size_and_align == 8 && zfill == 0) issue_read<8>(src);
    if (size_and_align == 4 && zfill == 0) issue_read<4>(src);
    (__pipeline_memcpy_async)(dst, src, size_and_align, zfill);
}
}  // namespace cuforge_cpu_pipeline
#endif
CF_RUNTIME inline void __pipeline_commit() { ++cuforge_cpu_pipeline::pending().open; }
// The copies of every batch committed before the `prior` most recent ones are made, in the order
// they were issued (uninstrumented: each made from its value, see make).
CF_RUNTIME inline void __pipeline_wait_prior(size_t prior) {
    cuforge_cpu_pipeline::Pending& p = cuforge_cpu_pipeline::pending();
    size_t kept = 0;
    for (size_t i = 0; i < p.count; ++i) {
        if (p.copies[i].batch + prior < p.open) cuforge_cpu_pipeline::make(p.copies[i]);
        else p.copies[kept++] = p.copies[i];
    }
    p.count = kept;
}
#endif
