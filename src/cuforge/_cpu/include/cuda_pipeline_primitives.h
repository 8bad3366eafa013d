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
#include <cstring>
#include <vector>
#pragma push_macro("__CUDA_ARCH__")
#undef __CUDA_ARCH__
#include <cuda_pipeline_helpers.h>
#pragma pop_macro("__CUDA_ARCH__")

namespace cuforge_cpu_pipeline {
struct Copy {
    void* dst;
    const void* src;
    unsigned size, from_source;  // (the bytes past from_source are zeroed)
    unsigned long long batch;
};
struct Pending {
    unsigned long long range = 0;  // (cuforge_cpu::ranges_run when made: a launch's range of blocks)
    long long block = -1;
    unsigned long long open = 0;  // the batch __pipeline_commit closes next
    std::vector<Copy> copies;
};
// The calling CUDA thread's copies (a worker runs one block at a time; its fibers index these).
CF_RUNTIME inline Pending& pending() {
    static thread_local std::vector<Pending> threads(CUFORGE_CPU_MAX_THREADS);
    cuforge_cpu::Worker& w = cuforge_cpu::worker();
    Pending& p = threads[w.cur];
    long long block = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
    if (p.range != cuforge_cpu::ranges_run || p.block != block)
        p.range = cuforge_cpu::ranges_run, p.block = block, p.open = 0, p.copies.clear();
    return p;
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
inline void make(const Copy& c) {
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
    p.copies.push_back({dst_shared, src_global, unsigned(size_and_align), unsigned(size_and_align - zfill), p.open});
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
inline void __pipeline_wait_prior(size_t prior) {
    cuforge_cpu_pipeline::Pending& p = cuforge_cpu_pipeline::pending();
    std::vector<cuforge_cpu_pipeline::Copy> due;
    size_t kept = 0;
    for (const cuforge_cpu_pipeline::Copy& c : p.copies) {  // (the batches before the `prior` most recent committed ones)
        if (c.batch + prior < p.open) due.push_back(c);
        else p.copies[kept++] = c;
    }
    p.copies.resize(kept);
    for (const cuforge_cpu_pipeline::Copy& c : due) cuforge_cpu_pipeline::make(c);
}
#endif
