// cuforge CPU backend: cuda::memcpy_async with a cuda::barrier, which libcu++ defines for CUDA
// compilation only. The group's threads copy the bytes between them at once, each its own units,
// where a GPU's copy completes with the barrier's phase; the phase completes once every thread
// has arrived, so after the barrier's wait every byte is there (and a read of the destination
// before any barrier is another thread's unordered write: the checked mode reports it as a
// race). Unlike cooperative_groups::memcpy_async here, whose copies are made at their wait, a
// read after a plain barrier (block.sync()) but before the barrier's wait, which may read stale
// data on a GPU, is not seen. The result says the copy is done: async_contract_fulfillment::none,
// as libcu++'s own synchronous fallback says.
#ifndef CUFORGE_CPU_CUDA_MEMCPY_ASYNC_H
#define CUFORGE_CPU_CUDA_MEMCPY_ASYNC_H

#include_next <cuda/__memcpy_async/memcpy_async.h>
#include <cuda/__barrier/async_contract_fulfillment.h>
#include <cuda/__barrier/barrier.h>
#include <cuda/__memory/aligned_size.h>
#include <cuda/std/cstddef>
#include <cooperative_groups/memcpy_async.h>

#include <cuda/std/__cccl/prologue.h>
_CCCL_BEGIN_NAMESPACE_CUDA
namespace cuforge_detail {
struct one_thread {  // the single-thread forms' group
    unsigned long long thread_rank() const { return 0; }
    unsigned long long size() const { return 1; }
};
template <class Group, class T>
inline async_contract_fulfillment copy(const Group& g, T* dst, const T* src, ::cuda::std::size_t bytes) {
    ::cooperative_groups::cuforge_detail::copy(g, const_cast<void*>(static_cast<const void*>(dst)), src, bytes,
                                               ::cooperative_groups::cuforge_detail::element_size<T>::value);
    return async_contract_fulfillment::none;
}
}  // namespace cuforge_detail

template <typename _Group, class _Tp, ::cuda::std::size_t _Alignment, thread_scope _Sco, typename _CompF>
inline async_contract_fulfillment memcpy_async(_Group const& __group, _Tp* __destination, _Tp const* __source,
                                               aligned_size_t<_Alignment> __size, barrier<_Sco, _CompF>&) {
    static_assert(_Alignment >= alignof(_Tp), "alignment must be at least the alignof(T)");
    return cuforge_detail::copy(__group, __destination, __source, static_cast<::cuda::std::size_t>(__size));
}
template <class _Tp, typename _Size, thread_scope _Sco, typename _CompF>
inline async_contract_fulfillment memcpy_async(_Tp* __destination, _Tp const* __source, _Size __size,
                                               barrier<_Sco, _CompF>&) {
    return cuforge_detail::copy(cuforge_detail::one_thread{}, __destination, __source,
                                static_cast<::cuda::std::size_t>(__size));
}
template <typename _Group, class _Tp, thread_scope _Sco, typename _CompF>
inline async_contract_fulfillment memcpy_async(_Group const& __group, _Tp* __destination, _Tp const* __source,
                                               ::cuda::std::size_t __size, barrier<_Sco, _CompF>&) {
    return cuforge_detail::copy(__group, __destination, __source, __size);
}
template <typename _Group, thread_scope _Sco, typename _CompF>
inline async_contract_fulfillment memcpy_async(_Group const& __group, void* __destination, void const* __source,
                                               ::cuda::std::size_t __size, barrier<_Sco, _CompF>&) {
    return cuforge_detail::copy(__group, static_cast<char*>(__destination), static_cast<char const*>(__source), __size);
}
template <typename _Group, ::cuda::std::size_t _Alignment, thread_scope _Sco, typename _CompF>
inline async_contract_fulfillment memcpy_async(_Group const& __group, void* __destination, void const* __source,
                                               aligned_size_t<_Alignment> __size, barrier<_Sco, _CompF>&) {
    return cuforge_detail::copy(__group, static_cast<char*>(__destination), static_cast<char const*>(__source),
                                static_cast<::cuda::std::size_t>(__size));
}
template <typename _Size, thread_scope _Sco, typename _CompF>
inline async_contract_fulfillment memcpy_async(void* __destination, void const* __source, _Size __size,
                                               barrier<_Sco, _CompF>&) {
    return cuforge_detail::copy(cuforge_detail::one_thread{}, static_cast<char*>(__destination),
                                static_cast<char const*>(__source), static_cast<::cuda::std::size_t>(__size));
}
_CCCL_END_NAMESPACE_CUDA
#include <cuda/std/__cccl/epilogue.h>

#endif
