// cuforge CPU backend: cub::BlockLoad and the direct loads (see cub/detail/cuforge_cpu.cuh). Each
// algorithm gives its arrangement (BLOCK_LOAD_STRIPED a striped one, the others blocked), read
// straight from the source: the transposing algorithms' trip through the TempStorage, which
// ends in the same arrangement, is not made (so a TempStorage reused without a barrier after
// one of them is not seen to race here). Guarded loads leave, or set to the default, the items
// past the valid ones.
#pragma once
#include "../detail/cuforge_cpu.cuh"

namespace cub {

enum BlockLoadAlgorithm {
    BLOCK_LOAD_DIRECT,
    BLOCK_LOAD_STRIPED,
    BLOCK_LOAD_VECTORIZE,
    BLOCK_LOAD_TRANSPOSE,
    BLOCK_LOAD_WARP_TRANSPOSE,
    BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED,
};

namespace cuforge_cpu_detail {
// The source index of a thread's item i in each arrangement.
CF_CUB_INLINE int blocked(int tid, int i, int items) { return tid * items + i; }
CF_CUB_INLINE int striped(int tid, int i, int threads) { return tid + i * threads; }
CF_CUB_INLINE int warp_striped(int tid, int i, int items) { return (tid / 32) * 32 * items + tid % 32 + i * 32; }
}  // namespace cuforge_cpu_detail

template <class T, int N, class It> CF_CUB_INLINE void LoadDirectBlocked(int linear_tid, It src, T (&items)[N]) {
    for (int i = 0; i < N; ++i) items[i] = src[cuforge_cpu_detail::blocked(linear_tid, i, N)];
}
template <class T, int N, class It> CF_CUB_INLINE void LoadDirectBlocked(int linear_tid, It src, T (&items)[N], int valid) {
    for (int i = 0; i < N; ++i)
        if (cuforge_cpu_detail::blocked(linear_tid, i, N) < valid) items[i] = src[cuforge_cpu_detail::blocked(linear_tid, i, N)];
}
template <class T, class D, int N, class It>
CF_CUB_INLINE void LoadDirectBlocked(int linear_tid, It src, T (&items)[N], int valid, D oob_default) {
    for (int i = 0; i < N; ++i) items[i] = oob_default;
    LoadDirectBlocked(linear_tid, src, items, valid);
}
template <class T, int N> CF_CUB_INLINE void LoadDirectBlockedVectorized(int linear_tid, T* src, T (&items)[N]) {
    LoadDirectBlocked(linear_tid, src, items);
}
template <int Threads, class T, int N, class It> CF_CUB_INLINE void LoadDirectStriped(int linear_tid, It src, T (&items)[N]) {
    for (int i = 0; i < N; ++i) items[i] = src[cuforge_cpu_detail::striped(linear_tid, i, Threads)];
}
template <int Threads, class T, int N, class It>
CF_CUB_INLINE void LoadDirectStriped(int linear_tid, It src, T (&items)[N], int valid) {
    for (int i = 0; i < N; ++i)
        if (cuforge_cpu_detail::striped(linear_tid, i, Threads) < valid) items[i] = src[cuforge_cpu_detail::striped(linear_tid, i, Threads)];
}
template <int Threads, class T, class D, int N, class It>
CF_CUB_INLINE void LoadDirectStriped(int linear_tid, It src, T (&items)[N], int valid, D oob_default) {
    for (int i = 0; i < N; ++i) items[i] = oob_default;
    LoadDirectStriped<Threads>(linear_tid, src, items, valid);
}
template <class T, int N, class It> CF_CUB_INLINE void LoadDirectWarpStriped(int linear_tid, It src, T (&items)[N]) {
    for (int i = 0; i < N; ++i) items[i] = src[cuforge_cpu_detail::warp_striped(linear_tid, i, N)];
}
template <class T, int N, class It> CF_CUB_INLINE void LoadDirectWarpStriped(int linear_tid, It src, T (&items)[N], int valid) {
    for (int i = 0; i < N; ++i)
        if (cuforge_cpu_detail::warp_striped(linear_tid, i, N) < valid) items[i] = src[cuforge_cpu_detail::warp_striped(linear_tid, i, N)];
}
template <class T, class D, int N, class It>
CF_CUB_INLINE void LoadDirectWarpStriped(int linear_tid, It src, T (&items)[N], int valid, D oob_default) {
    for (int i = 0; i < N; ++i) items[i] = oob_default;
    LoadDirectWarpStriped(linear_tid, src, items, valid);
}

template <class T, int BlockDimX, int ItemsPerThread, BlockLoadAlgorithm Algorithm = BLOCK_LOAD_DIRECT, int BlockDimY = 1,
          int BlockDimZ = 1>
class BlockLoad {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    int linear_tid;

public:
    // (CUB's: none for the direct algorithms, else its BlockExchange's)
    struct TempStorage
        : Uninitialized<std::conditional_t<Algorithm == BLOCK_LOAD_DIRECT || Algorithm == BLOCK_LOAD_STRIPED ||
                                               Algorithm == BLOCK_LOAD_VECTORIZE,
                                           NullType, cuforge_cpu_detail::ExchangeLayout<T, BLOCK_THREADS, ItemsPerThread,
                                                                                        Algorithm == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED>>> {};

    CF_CUB_INLINE BlockLoad() : linear_tid(int(RowMajorTid(BlockDimX, BlockDimY, BlockDimZ))) {
        cuforge_cpu_detail::check_block("cub::BlockLoad", BLOCK_THREADS);
    }
    CF_CUB_INLINE BlockLoad(TempStorage&) : BlockLoad() {}

    template <class It> CF_CUB_INLINE void Load(It src, T (&items)[ItemsPerThread]) {
        if (Algorithm == BLOCK_LOAD_STRIPED) LoadDirectStriped<BLOCK_THREADS>(linear_tid, src, items);
        else LoadDirectBlocked(linear_tid, src, items);
    }
    template <class It> CF_CUB_INLINE void Load(It src, T (&items)[ItemsPerThread], int block_items_end) {
        if (Algorithm == BLOCK_LOAD_STRIPED) LoadDirectStriped<BLOCK_THREADS>(linear_tid, src, items, block_items_end);
        else LoadDirectBlocked(linear_tid, src, items, block_items_end);
    }
    template <class It, class D> CF_CUB_INLINE void Load(It src, T (&items)[ItemsPerThread], int block_items_end, D oob_default) {
        if (Algorithm == BLOCK_LOAD_STRIPED) LoadDirectStriped<BLOCK_THREADS>(linear_tid, src, items, block_items_end, oob_default);
        else LoadDirectBlocked(linear_tid, src, items, block_items_end, oob_default);
    }
};

}  // namespace cub
