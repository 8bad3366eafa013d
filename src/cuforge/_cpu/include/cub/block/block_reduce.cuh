// cuforge CPU backend: cub::BlockReduce (see cub/detail/cuforge_cpu.cuh), by warp reductions
// whatever the algorithm named (CUB's default; the others differ only in a floating-point sum's
// rounding): each warp reduces by shuffles, its lane 0 writes the warp's result to the
// TempStorage, a barrier, then thread 0 adds the warps' results. The result is thread 0's.
#pragma once
#include "../detail/cuforge_cpu.cuh"
#include "../thread/thread_operators.cuh"

namespace cub {

enum BlockReduceAlgorithm {
    BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
    BLOCK_REDUCE_RAKING,
    BLOCK_REDUCE_WARP_REDUCTIONS,
    BLOCK_REDUCE_WARP_REDUCTIONS_NONDETERMINISTIC,
};

template <class T, int BlockDimX, BlockReduceAlgorithm Algorithm = BLOCK_REDUCE_WARP_REDUCTIONS, int BlockDimY = 1,
          int BlockDimZ = 1>
class BlockReduce {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int WARPS = (BLOCK_THREADS + 31) / 32;
    static constexpr int LOGICAL_WARP = BLOCK_THREADS < 32 ? BLOCK_THREADS : 32;
    static constexpr bool EVEN_WARPS = BLOCK_THREADS % LOGICAL_WARP == 0;
    struct _TempStorage {
        T warp_aggregates[WARPS];
    };
    _TempStorage& temp_storage;
    unsigned linear_tid;

    template <bool FullTile, class ReductionOp> CF_CUB_INLINE T reduce(T input, ReductionOp op, int num_valid, cuforge_cpu_detail::Site at) {
        namespace d = cuforge_cpu_detail;
        if (FullTile) d::check_block("cub::BlockReduce", BLOCK_THREADS);  // (every warp's result is read)
        else if (__builtin_expect(num_valid > int(d::block_threads()), 0))
            cuforge_cpu::fail(CF_BLOCK_FMT ": cub::BlockReduce at %s, line %u reduces num_valid = %d items, but the block "
                              "has %u threads; a smaller block leaves the warps past its end undefined: pass at most "
                              "the block's number of threads", CF_BLOCK_ARGS, at.file, at.line, num_valid,
                              d::block_threads());
        int warp = int(linear_tid) / 32, warp_offset = warp * LOGICAL_WARP;
        int warp_valid = (FullTile && EVEN_WARPS) || warp_offset + LOGICAL_WARP <= num_valid ? LOGICAL_WARP : num_valid - warp_offset;
        d::Warp w = d::logical_warp<LOGICAL_WARP>(FullTile ? unsigned(BLOCK_THREADS) : d::block_threads());
        w.at = at;
        T aggregate = d::warp_reduce<LOGICAL_WARP>(w, input, op, warp_valid);
        if (w.lane == 0) d::put(temp_storage.warp_aggregates[warp], aggregate);
        __syncthreads();
        if (linear_tid == 0)
            for (int k = 1; k < WARPS; ++k)
                if (FullTile || k * LOGICAL_WARP < num_valid) aggregate = op(aggregate, temp_storage.warp_aggregates[k]);
        return d::defined_in_first(aggregate, linear_tid == 0, "cub::BlockReduce's result", at);
    }

public:
    struct TempStorage : Uninitialized<_TempStorage> {};

    CF_CUB_INLINE BlockReduce()
        : temp_storage(cuforge_cpu_detail::private_storage<_TempStorage>("cub::BlockReduce's own TempStorage")),
          linear_tid(RowMajorTid(BlockDimX, BlockDimY, BlockDimZ)) {
        cuforge_cpu_detail::check_block("cub::BlockReduce", BLOCK_THREADS, true);
    }
    CF_CUB_INLINE BlockReduce(TempStorage& temp_storage)
        : temp_storage(temp_storage.Alias()), linear_tid(RowMajorTid(BlockDimX, BlockDimY, BlockDimZ)) {
        cuforge_cpu_detail::check_block("cub::BlockReduce", BLOCK_THREADS, true);
    }

    using Site = cuforge_cpu_detail::Site;
    template <class ReductionOp> CF_CUB_INLINE T Reduce(T input, ReductionOp reduction_op, Site at = Site::here()) {
        return reduce<true>(input, reduction_op, BLOCK_THREADS, at);
    }
    template <int N, class ReductionOp> CF_CUB_INLINE T Reduce(T (&inputs)[N], ReductionOp reduction_op, Site at = Site::here()) {
        return Reduce(cuforge_cpu_detail::thread_reduce(inputs, reduction_op), reduction_op, at);
    }
    template <class ReductionOp> CF_CUB_INLINE T Reduce(T input, ReductionOp reduction_op, int num_valid, Site at = Site::here()) {
        return num_valid >= BLOCK_THREADS ? reduce<true>(input, reduction_op, num_valid, at)
                                          : reduce<false>(input, reduction_op, num_valid, at);
    }
    CF_CUB_INLINE T Sum(T input, Site at = Site::here()) { return Reduce(input, ::cuda::std::plus<>{}, at); }
    template <int N> CF_CUB_INLINE T Sum(T (&inputs)[N], Site at = Site::here()) { return Reduce(inputs, ::cuda::std::plus<>{}, at); }
    CF_CUB_INLINE T Sum(T input, int num_valid, Site at = Site::here()) { return Reduce(input, ::cuda::std::plus<>{}, num_valid, at); }
};

}  // namespace cub
