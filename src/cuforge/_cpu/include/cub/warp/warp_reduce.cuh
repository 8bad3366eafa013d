// cuforge CPU backend: cub::WarpReduce (see cub/detail/cuforge_cpu.cuh). The result is defined
// in each logical warp's lane 0.
#pragma once
#include "../detail/cuforge_cpu.cuh"
#include "../thread/thread_operators.cuh"

namespace cub {

template <class T, int LogicalWarpThreads = 32> class WarpReduce {
    static_assert(LogicalWarpThreads >= 1 && LogicalWarpThreads <= 32, "LogicalWarpThreads must be in the range [1, 32]");

public:
    struct TempStorage : Uninitialized<NullType> {};

    CF_CUB_INLINE WarpReduce(TempStorage&) {}

    using Site = cuforge_cpu_detail::Site;
    CF_CUB_INLINE T Sum(T input, Site at = Site::here()) { return Reduce(input, ::cuda::std::plus<>{}, at); }
    template <int N> CF_CUB_INLINE T Sum(const T (&input)[N], Site at = Site::here()) {
        return Sum(cuforge_cpu_detail::thread_reduce(input, ::cuda::std::plus<>{}), at);
    }
    CF_CUB_INLINE T Sum(T input, int valid_items, Site at = Site::here()) { return Reduce(input, ::cuda::std::plus<>{}, valid_items, at); }
    CF_CUB_INLINE T Max(T input, Site at = Site::here()) { return Reduce(input, ::cuda::maximum<>{}, at); }
    template <int N> CF_CUB_INLINE T Max(const T (&input)[N], Site at = Site::here()) {
        return Max(cuforge_cpu_detail::thread_reduce(input, ::cuda::maximum<>{}), at);
    }
    CF_CUB_INLINE T Max(T input, int valid_items, Site at = Site::here()) { return Reduce(input, ::cuda::maximum<>{}, valid_items, at); }
    CF_CUB_INLINE T Min(T input, Site at = Site::here()) { return Reduce(input, ::cuda::minimum<>{}, at); }
    template <int N> CF_CUB_INLINE T Min(const T (&input)[N], Site at = Site::here()) {
        return Min(cuforge_cpu_detail::thread_reduce(input, ::cuda::minimum<>{}), at);
    }
    CF_CUB_INLINE T Min(T input, int valid_items, Site at = Site::here()) { return Reduce(input, ::cuda::minimum<>{}, valid_items, at); }

    template <class ReductionOp> CF_CUB_INLINE T Reduce(T input, ReductionOp op, Site at = Site::here()) {
        return Reduce(input, op, LogicalWarpThreads, at);
    }
    template <int N, class ReductionOp> CF_CUB_INLINE T Reduce(const T (&input)[N], ReductionOp op, Site at = Site::here()) {
        return Reduce(cuforge_cpu_detail::thread_reduce(input, op), op, at);
    }
    template <class ReductionOp> CF_CUB_INLINE T Reduce(T input, ReductionOp op, int valid_items, Site at = Site::here()) {
        cuforge_cpu_detail::Warp w = cuforge_cpu_detail::logical_warp<LogicalWarpThreads>(cuforge_cpu_detail::block_threads());
        w.at = at;
        T result = cuforge_cpu_detail::warp_reduce<LogicalWarpThreads>(w, input, op, valid_items);
        return cuforge_cpu_detail::defined_in_first(result, w.lane == 0, "cub::WarpReduce's result", at);
    }
};

}  // namespace cub
