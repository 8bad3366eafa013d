// cuforge CPU backend: cub::WarpScan (see cub/detail/cuforge_cpu.cuh). Every lane gets its
// result; an exclusive scan without an initial value leaves lane 0's undefined, as CUB does.
#pragma once
#include "../detail/cuforge_cpu.cuh"
#include "../thread/thread_operators.cuh"

namespace cub {

template <class T, int LogicalWarpThreads = 32> class WarpScan {
    static_assert(LogicalWarpThreads >= 1 && LogicalWarpThreads <= 32, "LogicalWarpThreads must be in the range [1, 32]");
    cuforge_cpu_detail::Warp w;

    template <class ScanOp> CF_CUB_INLINE void scan(T input, T& inclusive, T& exclusive, ScanOp op) {
        cuforge_cpu_detail::warp_scan<LogicalWarpThreads>(w, input, inclusive, exclusive, op);
    }
    CF_CUB_INLINE T last(const T& inclusive) const { return w.from(inclusive, w.count - 1); }

public:
    struct TempStorage : Uninitialized<NullType> {};

    CF_CUB_INLINE WarpScan(TempStorage&) : w(cuforge_cpu_detail::logical_warp<LogicalWarpThreads>(cuforge_cpu_detail::block_threads())) {}

    CF_CUB_INLINE void InclusiveSum(T input, T& inclusive_output) { InclusiveScan(input, inclusive_output, ::cuda::std::plus<>{}); }
    CF_CUB_INLINE void InclusiveSum(T input, T& inclusive_output, T& warp_aggregate) {
        InclusiveScan(input, inclusive_output, ::cuda::std::plus<>{}, warp_aggregate);
    }
    CF_CUB_INLINE void ExclusiveSum(T input, T& exclusive_output) { ExclusiveScan(input, exclusive_output, T{}, ::cuda::std::plus<>{}); }
    CF_CUB_INLINE void ExclusiveSum(T input, T& exclusive_output, T& warp_aggregate) {
        ExclusiveScan(input, exclusive_output, T{}, ::cuda::std::plus<>{}, warp_aggregate);
    }

    template <class ScanOp> CF_CUB_INLINE void InclusiveScan(T input, T& inclusive_output, ScanOp scan_op) {
        T exclusive;
        scan(input, inclusive_output, exclusive, scan_op);
    }
    template <class ScanOp> CF_CUB_INLINE void InclusiveScan(T input, T& inclusive_output, T initial_value, ScanOp scan_op) {
        InclusiveScan(input, inclusive_output, scan_op);
        inclusive_output = scan_op(initial_value, inclusive_output);
    }
    template <class ScanOp> CF_CUB_INLINE void InclusiveScan(T input, T& inclusive_output, ScanOp scan_op, T& warp_aggregate) {
        InclusiveScan(input, inclusive_output, scan_op);
        warp_aggregate = last(inclusive_output);
    }
    template <class ScanOp> CF_CUB_INLINE void InclusiveScan(T input, T& inclusive_output, T initial_value, ScanOp scan_op, T& warp_aggregate) {
        InclusiveScan(input, inclusive_output, scan_op, warp_aggregate);
        inclusive_output = scan_op(initial_value, inclusive_output);
    }

    template <class ScanOp> CF_CUB_INLINE void ExclusiveScan(T input, T& exclusive_output, ScanOp scan_op) {
        T inclusive;
        scan(input, inclusive, exclusive_output, scan_op);
    }
    template <class ScanOp> CF_CUB_INLINE void ExclusiveScan(T input, T& exclusive_output, T initial_value, ScanOp scan_op) {
        ExclusiveScan(input, exclusive_output, scan_op);
        exclusive_output = w.lane == 0 ? initial_value : T(scan_op(initial_value, exclusive_output));
    }
    template <class ScanOp> CF_CUB_INLINE void ExclusiveScan(T input, T& exclusive_output, ScanOp scan_op, T& warp_aggregate) {
        T inclusive;
        scan(input, inclusive, exclusive_output, scan_op);
        warp_aggregate = last(inclusive);
    }
    template <class ScanOp>
    CF_CUB_INLINE void ExclusiveScan(T input, T& exclusive_output, T initial_value, ScanOp scan_op, T& warp_aggregate) {
        ExclusiveScan(input, exclusive_output, scan_op, warp_aggregate);
        exclusive_output = w.lane == 0 ? initial_value : T(scan_op(initial_value, exclusive_output));
    }

    template <class ScanOp> CF_CUB_INLINE void Scan(T input, T& inclusive_output, T& exclusive_output, ScanOp scan_op) {
        scan(input, inclusive_output, exclusive_output, scan_op);
    }
    template <class ScanOp> CF_CUB_INLINE void Scan(T input, T& inclusive_output, T& exclusive_output, T initial_value, ScanOp scan_op) {
        scan(input, inclusive_output, exclusive_output, scan_op);
        exclusive_output = w.lane == 0 ? initial_value : T(scan_op(initial_value, exclusive_output));
        inclusive_output = scan_op(initial_value, inclusive_output);
    }

    CF_CUB_INLINE T Broadcast(T input, unsigned int src_lane) { return w.from(input, src_lane); }
};

}  // namespace cub
