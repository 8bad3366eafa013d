// cuforge CPU backend: cub::BlockScan (see cub/detail/cuforge_cpu.cuh), by warp scans whatever
// the algorithm named: each warp scans by shuffles, its last lane writes the warp's total to the
// TempStorage, a barrier, then each thread adds the totals of the warps before its own. Every
// thread gets its result and the block's aggregate; an exclusive scan without an initial value
// leaves thread 0's undefined, as CUB does. A prefix callback is called by the first warp, and
// its lane 0's answer is the block's prefix.
#pragma once
#include "../detail/cuforge_cpu.cuh"
#include "../thread/thread_operators.cuh"

namespace cub {

enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

template <class T, int BlockDimX, BlockScanAlgorithm Algorithm = BLOCK_SCAN_RAKING, int BlockDimY = 1, int BlockDimZ = 1>
class BlockScan {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int WARPS = (BLOCK_THREADS + 31) / 32;
    struct _TempStorage {
        T warp_aggregates[WARPS];
        T block_prefix;
    };
    _TempStorage& temp_storage;
    unsigned linear_tid;

    // The block's scan of one value per thread.
    template <class ScanOp> CF_CUB_INLINE void scan(T input, T& inclusive, T& exclusive, T& aggregate, ScanOp op) {
        namespace d = cuforge_cpu_detail;
        d::Warp w = d::logical_warp<32>(BLOCK_THREADS);
        T warp_inclusive, warp_exclusive;
        d::warp_scan<32>(w, input, warp_inclusive, warp_exclusive, op);
        unsigned warp = linear_tid / 32;
        if (w.lane + 1 == w.count) d::put(temp_storage.warp_aggregates[warp], warp_inclusive);
        __syncthreads();
        T total = temp_storage.warp_aggregates[0], prefix = total;  // (prefix: the warps' before this one)
        for (unsigned k = 1; k < unsigned(WARPS); ++k) {
            if (k == warp) prefix = total;
            total = op(total, temp_storage.warp_aggregates[k]);
        }
        aggregate = total;
        inclusive = warp ? T(op(prefix, warp_inclusive)) : warp_inclusive;
        exclusive = warp ? (w.lane ? T(op(prefix, warp_exclusive)) : prefix) : warp_exclusive;
    }
    // The first warp calls the callback with the block's aggregate; its lane 0's answer, to every thread.
    template <class PrefixOp> CF_CUB_INLINE T block_prefix(T aggregate, PrefixOp& prefix_op) {
        if (linear_tid < 32) {
            T prefix = prefix_op(aggregate);
            if (linear_tid == 0) temp_storage.block_prefix = prefix;
        }
        __syncthreads();
        return temp_storage.block_prefix;
    }
    template <int N, class ScanOp> CF_CUB_INLINE T items_prefix(T (&input)[N], ScanOp op) { return cuforge_cpu_detail::thread_reduce(input, op); }

public:
    struct TempStorage : Uninitialized<_TempStorage> {};

    CF_CUB_INLINE BlockScan()
        : temp_storage(cuforge_cpu_detail::private_storage<_TempStorage>("cub::BlockScan's own TempStorage")),
          linear_tid(RowMajorTid(BlockDimX, BlockDimY, BlockDimZ)) {
        cuforge_cpu_detail::check_block("cub::BlockScan", BLOCK_THREADS);
    }
    CF_CUB_INLINE BlockScan(TempStorage& temp_storage)
        : temp_storage(temp_storage.Alias()), linear_tid(RowMajorTid(BlockDimX, BlockDimY, BlockDimZ)) {
        cuforge_cpu_detail::check_block("cub::BlockScan", BLOCK_THREADS);
    }

    // ---- one item per thread
    template <class ScanOp> CF_CUB_INLINE void InclusiveScan(T input, T& output, ScanOp scan_op) {
        T exclusive, aggregate;
        scan(input, output, exclusive, aggregate, scan_op);
    }
    template <class ScanOp> CF_CUB_INLINE void InclusiveScan(T input, T& output, ScanOp scan_op, T& block_aggregate) {
        T exclusive;
        scan(input, output, exclusive, block_aggregate, scan_op);
    }
    template <class ScanOp, class BlockPrefixCallbackOp>
    CF_CUB_INLINE void InclusiveScan(T input, T& output, ScanOp scan_op, BlockPrefixCallbackOp& block_prefix_callback_op) {
        T exclusive, aggregate;
        scan(input, output, exclusive, aggregate, scan_op);
        output = scan_op(block_prefix(aggregate, block_prefix_callback_op), output);
    }
    template <class ScanOp> CF_CUB_INLINE void ExclusiveScan(T input, T& output, ScanOp scan_op) {
        T inclusive, aggregate;
        scan(input, inclusive, output, aggregate, scan_op);
    }
    template <class ScanOp> CF_CUB_INLINE void ExclusiveScan(T input, T& output, ScanOp scan_op, T& block_aggregate) {
        T inclusive;
        scan(input, inclusive, output, block_aggregate, scan_op);
    }
    template <class ScanOp> CF_CUB_INLINE void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op) {
        T aggregate;
        ExclusiveScan(input, output, initial_value, scan_op, aggregate);
    }
    template <class ScanOp> CF_CUB_INLINE void ExclusiveScan(T input, T& output, T initial_value, ScanOp scan_op, T& block_aggregate) {
        T inclusive;
        scan(input, inclusive, output, block_aggregate, scan_op);
        output = linear_tid ? T(scan_op(initial_value, output)) : initial_value;
    }
    template <class ScanOp, class BlockPrefixCallbackOp>
    CF_CUB_INLINE void ExclusiveScan(T input, T& output, ScanOp scan_op, BlockPrefixCallbackOp& block_prefix_callback_op) {
        T inclusive, aggregate;
        scan(input, inclusive, output, aggregate, scan_op);
        T prefix = block_prefix(aggregate, block_prefix_callback_op);
        output = linear_tid ? T(scan_op(prefix, output)) : prefix;
    }
    CF_CUB_INLINE void InclusiveSum(T input, T& output) { InclusiveScan(input, output, ::cuda::std::plus<>{}); }
    CF_CUB_INLINE void InclusiveSum(T input, T& output, T& block_aggregate) { InclusiveScan(input, output, ::cuda::std::plus<>{}, block_aggregate); }
    template <class BlockPrefixCallbackOp> CF_CUB_INLINE void InclusiveSum(T input, T& output, BlockPrefixCallbackOp& block_prefix_callback_op) {
        InclusiveScan(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
    }
    CF_CUB_INLINE void ExclusiveSum(T input, T& output) { ExclusiveScan(input, output, T{}, ::cuda::std::plus<>{}); }
    CF_CUB_INLINE void ExclusiveSum(T input, T& output, T& block_aggregate) { ExclusiveScan(input, output, T{}, ::cuda::std::plus<>{}, block_aggregate); }
    template <class BlockPrefixCallbackOp> CF_CUB_INLINE void ExclusiveSum(T input, T& output, BlockPrefixCallbackOp& block_prefix_callback_op) {
        ExclusiveScan(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
    }

    // ---- items per thread (a blocked arrangement: each thread's items consecutive)
    template <int N, class ScanOp> CF_CUB_INLINE void InclusiveScan(T (&input)[N], T (&output)[N], ScanOp scan_op) {
        T prefix = items_prefix(input, scan_op);
        ExclusiveScan(prefix, prefix, scan_op);
        cuforge_cpu_detail::thread_scan_inclusive(input, output, scan_op, prefix, linear_tid != 0);
    }
    template <int N, class ScanOp> CF_CUB_INLINE void InclusiveScan(T (&input)[N], T (&output)[N], ScanOp scan_op, T& block_aggregate) {
        T prefix = items_prefix(input, scan_op);
        ExclusiveScan(prefix, prefix, scan_op, block_aggregate);
        cuforge_cpu_detail::thread_scan_inclusive(input, output, scan_op, prefix, linear_tid != 0);
    }
    template <int N, class ScanOp, class BlockPrefixCallbackOp>
    CF_CUB_INLINE void InclusiveScan(T (&input)[N], T (&output)[N], ScanOp scan_op, BlockPrefixCallbackOp& block_prefix_callback_op) {
        T prefix = items_prefix(input, scan_op);
        ExclusiveScan(prefix, prefix, scan_op, block_prefix_callback_op);
        cuforge_cpu_detail::thread_scan_inclusive(input, output, scan_op, prefix, true);
    }
    template <int N, class ScanOp> CF_CUB_INLINE void ExclusiveScan(T (&input)[N], T (&output)[N], ScanOp scan_op) {
        T prefix = items_prefix(input, scan_op);
        ExclusiveScan(prefix, prefix, scan_op);
        cuforge_cpu_detail::thread_scan_exclusive(input, output, scan_op, prefix, linear_tid != 0);
    }
    template <int N, class ScanOp> CF_CUB_INLINE void ExclusiveScan(T (&input)[N], T (&output)[N], ScanOp scan_op, T& block_aggregate) {
        T prefix = items_prefix(input, scan_op);
        ExclusiveScan(prefix, prefix, scan_op, block_aggregate);
        cuforge_cpu_detail::thread_scan_exclusive(input, output, scan_op, prefix, linear_tid != 0);
    }
    template <int N, class ScanOp> CF_CUB_INLINE void ExclusiveScan(T (&input)[N], T (&output)[N], T initial_value, ScanOp scan_op) {
        T aggregate;
        ExclusiveScan(input, output, initial_value, scan_op, aggregate);
    }
    template <int N, class ScanOp>
    CF_CUB_INLINE void ExclusiveScan(T (&input)[N], T (&output)[N], T initial_value, ScanOp scan_op, T& block_aggregate) {
        T prefix = items_prefix(input, scan_op);
        ExclusiveScan(prefix, prefix, initial_value, scan_op, block_aggregate);
        cuforge_cpu_detail::thread_scan_exclusive(input, output, scan_op, prefix, true);
    }
    template <int N, class ScanOp, class BlockPrefixCallbackOp>
    CF_CUB_INLINE void ExclusiveScan(T (&input)[N], T (&output)[N], ScanOp scan_op, BlockPrefixCallbackOp& block_prefix_callback_op) {
        T prefix = items_prefix(input, scan_op);
        ExclusiveScan(prefix, prefix, scan_op, block_prefix_callback_op);
        cuforge_cpu_detail::thread_scan_exclusive(input, output, scan_op, prefix, true);
    }
    template <int N> CF_CUB_INLINE void InclusiveSum(T (&input)[N], T (&output)[N]) { InclusiveScan(input, output, ::cuda::std::plus<>{}); }
    template <int N> CF_CUB_INLINE void InclusiveSum(T (&input)[N], T (&output)[N], T& block_aggregate) {
        InclusiveScan(input, output, ::cuda::std::plus<>{}, block_aggregate);
    }
    template <int N, class BlockPrefixCallbackOp>
    CF_CUB_INLINE void InclusiveSum(T (&input)[N], T (&output)[N], BlockPrefixCallbackOp& block_prefix_callback_op) {
        InclusiveScan(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
    }
    template <int N> CF_CUB_INLINE void ExclusiveSum(T (&input)[N], T (&output)[N]) { ExclusiveScan(input, output, T{}, ::cuda::std::plus<>{}); }
    template <int N> CF_CUB_INLINE void ExclusiveSum(T (&input)[N], T (&output)[N], T& block_aggregate) {
        ExclusiveScan(input, output, T{}, ::cuda::std::plus<>{}, block_aggregate);
    }
    template <int N, class BlockPrefixCallbackOp>
    CF_CUB_INLINE void ExclusiveSum(T (&input)[N], T (&output)[N], BlockPrefixCallbackOp& block_prefix_callback_op) {
        ExclusiveScan(input, output, ::cuda::std::plus<>{}, block_prefix_callback_op);
    }
};

}  // namespace cub
