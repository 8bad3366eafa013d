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
    const void* launch = nullptr;
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
    if (p.launch != w.L || p.block != block) p.launch = w.L, p.block = block, p.open = 0, p.copies.clear();
    return p;
}
// The copy itself: memcpy and memset, which a checked build sees as the accesses they make.
inline void make(const Copy& c) {
    memcpy(c.dst, c.src, c.from_source);
    if (c.size > c.from_source) memset(static_cast<char*>(c.dst) + c.from_source, 0, c.size - c.from_source);
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
