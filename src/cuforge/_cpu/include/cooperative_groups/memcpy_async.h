// cuforge CPU backend: cooperative_groups::memcpy_async, wait and wait_prior.
//
// The group's threads copy the bytes between them, each its own units, where a GPU's copy runs
// asynchronously; wait(group) is the group's barrier, after which every unit has arrived (so a
// read of the destination before the wait is another thread's unordered write: the checked mode
// reports it as a race). A unit is the largest of 16, 8, 4, 2 or 1 bytes that the addresses
// and the size allow, at least an element where the pointers are typed: no thread writes part of
// an element another writes.
#pragma once
#include <cstddef>
#include "../cooperative_groups.h"

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

template <class T> struct element_size { static constexpr size_t value = sizeof(T); };
template <> struct element_size<void> { static constexpr size_t value = 1; };
template <> struct element_size<const void> { static constexpr size_t value = 1; };
}  // namespace cuforge_detail

// memcpy_async(group, dst, src, bytes): `bytes` a size_t or a cuda::aligned_size_t<N>.
template <class Group, class T, class Size>
inline void memcpy_async(const Group& g, T* __restrict__ dst, const T* __restrict__ src, const Size& bytes) {
    cuforge_detail::copy(g, const_cast<void*>(static_cast<const void*>(dst)), src, static_cast<size_t>(bytes),
                         cuforge_detail::element_size<T>::value);
}
// memcpy_async(group, dst, dst_count, src, src_count): counts of elements; the smaller is copied.
template <class Group, class T, class DstCount, class SrcCount>
inline void memcpy_async(const Group& g, T* __restrict__ dst, const DstCount& dst_count, const T* __restrict__ src,
                         const SrcCount& src_count) {
    size_t n = static_cast<size_t>(dst_count) < static_cast<size_t>(src_count) ? static_cast<size_t>(dst_count)
                                                                               : static_cast<size_t>(src_count);
    cuforge_detail::copy(g, dst, src, n * sizeof(T), sizeof(T));
}

template <class Group> inline void wait(const Group& g) { g.sync(); }
template <unsigned Stages, class Group> inline void wait_prior(const Group& g) { g.sync(); }
}  // namespace cooperative_groups
