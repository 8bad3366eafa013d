// cuforge CPU backend: cub::WarpReduce (see cub/detail/cuforge_cpu.cuh). The result is defined
// in each logical warp's lane 0.
#pragma once
#include "../detail/cuforge_cpu.cuh"

namespace cub {

template <class T, int LogicalWarpThreads = 32> class WarpReduce {
    static_assert(LogicalWarpThreads >= 1 && LogicalWarpThreads <= 32, "LogicalWarpThreads must be in the range [1, 32]");

public:
    struct TempStorage : Uninitialized<NullType> {};

    CF_CUB_INLINE WarpReduce(TempStorage&) {}

    CF_CUB_INLINE T Sum(T input) { return Reduce(input, ::cuda::std::plus<>{}); }
    template <int N> CF_CUB_INLINE T Sum(const T (&input)[N]) { return Sum(cuforge_cpu_detail::thread_reduce(input, ::cuda::std::plus<>{})); }
    CF_CUB_INLINE T Sum(T input, int valid_items) { return Reduce(input, ::cuda::std::plus<>{}, valid_items); }
    CF_CUB_INLINE T Max(T input) { return Reduce(input, ::cuda::maximum<>{}); }
    template <int N> CF_CUB_INLINE T Max(const T (&input)[N]) { return Max(cuforge_cpu_detail::thread_reduce(input, ::cuda::maximum<>{})); }
    CF_CUB_INLINE T Max(T input, int valid_items) { return Reduce(input, ::cuda::maximum<>{}, valid_items); }
    CF_CUB_INLINE T Min(T input) { return Reduce(input, ::cuda::minimum<>{}); }
    template <int N> CF_CUB_INLINE T Min(const T (&input)[N]) { return Min(cuforge_cpu_detail::thread_reduce(input, ::cuda::minimum<>{})); }
    CF_CUB_INLINE T Min(T input, int valid_items) { return Reduce(input, ::cuda::minimum<>{}, valid_items); }

    template <class ReductionOp> CF_CUB_INLINE T Reduce(T input, ReductionOp op) { return Reduce(input, op, LogicalWarpThreads); }
    template <int N, class ReductionOp> CF_CUB_INLINE T Reduce(const T (&input)[N], ReductionOp op) {
        return Reduce(cuforge_cpu_detail::thread_reduce(input, op), op);
    }
    template <class ReductionOp> CF_CUB_INLINE T Reduce(T input, ReductionOp op, int valid_items) {
        cuforge_cpu_detail::Warp w = cuforge_cpu_detail::logical_warp<LogicalWarpThreads>(cuforge_cpu_detail::block_threads());
        return cuforge_cpu_detail::warp_reduce<LogicalWarpThreads>(w, input, op, valid_items);
    }
};

}  // namespace cub
