// cuforge CPU backend: cooperative_groups::memcpy_async, wait and wait_prior.
//
// A GPU's copy into shared memory runs asynchronously (cp.async on sm_80 and later) and
// completes only at the wait that covers it: a barrier (block.sync(), __syncthreads()) does not
// wait for it. So here each thread's share of such a copy is held until its wait: wait(group)
// makes every copy the thread issued, then is the group's barrier, after which every unit has
// arrived; wait_prior<N>(group) makes all but the N most recent batches (each memcpy_async call
// one, as each __pipeline_commit). A read of the destination before its wait reads what was
// there, as it may on a GPU, and a checked launch reports it (the copy's writes are the waiting
// thread's, at its wait). Copies a thread never waits for are dropped at its block's end, with
// its shared memory. Copies between other memories are made at once, as CUDA makes them. A unit
// is the largest of 16, 8, 4, 2 or 1 bytes that the addresses and the size allow, at least an
// element where the pointers are typed: no thread writes part of an element another writes.
#pragma once
#include <cstddef>
#include "../cooperative_groups.h"
#include <cuda_pipeline_primitives.h>

namespace cooperative_groups {
namespace cuforge_detail {
template <unsigned U> struct unit { alignas(U) unsigned char bytes[U]; };

template <unsigned U, class Group> inline void copy_units(const Group& g, void* dst, const void* src, size_t bytes) {
    unit<U>* d = static_cast<unit<U>*>(dst);
    const unit<U>* s = static_cast<const unit<U>*>(src);
    for (size_t i = g.thread_rank(); i < bytes / U; i += g.size()) d[i] = s[i];
}

template <class Group> inline void copy(const Group& g, void* dst, const void* src, size_t bytes, size_t least) {
    size_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes;
    size_t u = a % 16 == 0 ? 16 : a % 8 == 0 ? 8 : a % 4 == 0 ? 4 : a % 2 == 0 ? 2 : 1;
    if (u < least && bytes % least == 0) u = least;  // (an element whose alignment is less than its size: whole elements)
    switch (u) {
        case 16: return copy_units<16>(g, dst, src, bytes);
        case 8: return copy_units<8>(g, dst, src, bytes);
        case 4: return copy_units<4>(g, dst, src, bytes);
        case 2: return copy_units<2>(g, dst, src, bytes);
        default:
            break;
    }
    unsigned char* d = static_cast<unsigned char*>(dst);
    const unsigned char* s = static_cast<const unsigned char*>(src);
    if (u == 1) {
        for (size_t i = g.thread_rank(); i < bytes; i += g.size()) d[i] = s[i];
        return;
    }
    for (size_t e = g.thread_rank(); e < bytes / u; e += g.size())  // (elements of an odd size)
        for (size_t k = 0; k < u; ++k) d[e * u + k] = s[e * u + k];
}

// A thread's share of a copy into shared memory from global memory is held until its wait, in
// the thread's queue of <cuda_pipeline_primitives.h> (CUDA makes cg::memcpy_async a
// __pipeline_memcpy_async and a commit: each call a batch); between other memories CUDA copies
// at once, as here.
struct Ranked {  // the issuing group as it was, for the copy made at the wait
    size_t rank, n;
    size_t thread_rank() const { return rank; }
    size_t size() const { return n; }
};
inline void make_share(const cuforge_cpu_pipeline::Copy& c) {  // (instrumented: the kernel's accesses)
    copy(Ranked{c.rank, c.n}, c.dst, c.src, c.size, c.least);
}
template <class Group> CF_RUNTIME inline void hold(const Group& g, void* dst, const void* src, size_t bytes, size_t least) {
    if (!__isShared(dst) || !__isGlobal(src)) return copy(g, dst, src, bytes, least);
    cuforge_cpu_pipeline::Pending& p = cuforge_cpu_pipeline::pending();
    cuforge_cpu_pipeline::hold(p, {dst, src, bytes, bytes, p.open, &make_share, size_t(g.thread_rank()), size_t(g.size()), least});
    ++p.open;
}

template <class T> struct element_size { static constexpr size_t value = sizeof(T); };
template <> struct element_size<void> { static constexpr size_t value = 1; };
template <> struct element_size<const void> { static constexpr size_t value = 1; };
}  // namespace cuforge_detail

// memcpy_async(group, dst, src, bytes): `bytes` a size_t or a cuda::aligned_size_t<N>.
template <class Group, class T, class Size>
inline void memcpy_async(const Group& g, T* __restrict__ dst, const T* __restrict__ src, const Size& bytes) {
    cuforge_detail::hold(g, const_cast<void*>(static_cast<const void*>(dst)), src, static_cast<size_t>(bytes),
                         cuforge_detail::element_size<T>::value);
}
// memcpy_async(group, dst, dst_count, src, src_count): counts of elements; the smaller is copied.
template <class Group, class T, class DstCount, class SrcCount>
inline void memcpy_async(const Group& g, T* __restrict__ dst, const DstCount& dst_count, const T* __restrict__ src,
                         const SrcCount& src_count) {
    size_t n = static_cast<size_t>(dst_count) < static_cast<size_t>(src_count) ? static_cast<size_t>(dst_count)
                                                                               : static_cast<size_t>(src_count);
    cuforge_detail::hold(g, const_cast<void*>(static_cast<const void*>(dst)), src, n * sizeof(T), sizeof(T));
}

template <class Group> inline void wait(const Group& g) {
    __pipeline_wait_prior(0);
    g.sync();
}
template <unsigned Stages, class Group> inline void wait_prior(const Group& g) {
    __pipeline_wait_prior(Stages);
    g.sync();
}
}  // namespace cooperative_groups
