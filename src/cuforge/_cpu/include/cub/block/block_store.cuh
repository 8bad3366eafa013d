// cuforge CPU backend: cub::BlockStore and the direct stores (see cub/block/block_load.cuh): each
// algorithm takes its arrangement (BLOCK_STORE_STRIPED a striped one, the others blocked) and
// writes straight to the destination; guarded stores write the valid items only.
#pragma once
#include "block_load.cuh"

namespace cub {

enum BlockStoreAlgorithm {
    BLOCK_STORE_DIRECT,
    BLOCK_STORE_STRIPED,
    BLOCK_STORE_VECTORIZE,
    BLOCK_STORE_TRANSPOSE,
    BLOCK_STORE_WARP_TRANSPOSE,
    BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED,
};

template <class T, int N, class It> CF_CUB_INLINE void StoreDirectBlocked(int linear_tid, It dst, T (&items)[N]) {
    for (int i = 0; i < N; ++i) dst[cuforge_cpu_detail::blocked(linear_tid, i, N)] = items[i];
}
template <class T, int N, class It> CF_CUB_INLINE void StoreDirectBlocked(int linear_tid, It dst, T (&items)[N], int valid) {
    for (int i = 0; i < N; ++i)
        if (cuforge_cpu_detail::blocked(linear_tid, i, N) < valid) dst[cuforge_cpu_detail::blocked(linear_tid, i, N)] = items[i];
}
template <class T, int N> CF_CUB_INLINE void StoreDirectBlockedVectorized(int linear_tid, T* dst, T (&items)[N]) {
    StoreDirectBlocked(linear_tid, dst, items);
}
template <int Threads, class T, int N, class It> CF_CUB_INLINE void StoreDirectStriped(int linear_tid, It dst, T (&items)[N]) {
    for (int i = 0; i < N; ++i) dst[cuforge_cpu_detail::striped(linear_tid, i, Threads)] = items[i];
}
template <int Threads, class T, int N, class It>
CF_CUB_INLINE void StoreDirectStriped(int linear_tid, It dst, T (&items)[N], int valid) {
    for (int i = 0; i < N; ++i)
        if (cuforge_cpu_detail::striped(linear_tid, i, Threads) < valid) dst[cuforge_cpu_detail::striped(linear_tid, i, Threads)] = items[i];
}
template <class T, int N, class It> CF_CUB_INLINE void StoreDirectWarpStriped(int linear_tid, It dst, T (&items)[N]) {
    for (int i = 0; i < N; ++i) dst[cuforge_cpu_detail::warp_striped(linear_tid, i, N)] = items[i];
}
template <class T, int N, class It> CF_CUB_INLINE void StoreDirectWarpStriped(int linear_tid, It dst, T (&items)[N], int valid) {
    for (int i = 0; i < N; ++i)
        if (cuforge_cpu_detail::warp_striped(linear_tid, i, N) < valid) dst[cuforge_cpu_detail::warp_striped(linear_tid, i, N)] = items[i];
}

template <class T, int BlockDimX, int ItemsPerThread, BlockStoreAlgorithm Algorithm = BLOCK_STORE_DIRECT, int BlockDimY = 1,
          int BlockDimZ = 1>
class BlockStore {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    int linear_tid;

public:
    // (CUB's: none for the direct algorithms, else its BlockExchange's and a count)
    struct TempStorage
        : Uninitialized<std::conditional_t<Algorithm == BLOCK_STORE_DIRECT || Algorithm == BLOCK_STORE_STRIPED ||
                                               Algorithm == BLOCK_STORE_VECTORIZE,
                                           NullType, cuforge_cpu_detail::StoreLayout<T, BLOCK_THREADS, ItemsPerThread,
                                                                                     Algorithm == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED>>> {};

    CF_CUB_INLINE BlockStore() : linear_tid(int(RowMajorTid(BlockDimX, BlockDimY, BlockDimZ))) {
        cuforge_cpu_detail::check_block("cub::BlockStore", BLOCK_THREADS);
    }
    CF_CUB_INLINE BlockStore(TempStorage&) : BlockStore() {}

    template <class It> CF_CUB_INLINE void Store(It dst, T (&items)[ItemsPerThread]) {
        if (Algorithm == BLOCK_STORE_STRIPED) StoreDirectStriped<BLOCK_THREADS>(linear_tid, dst, items);
        else StoreDirectBlocked(linear_tid, dst, items);
    }
    template <class It> CF_CUB_INLINE void Store(It dst, T (&items)[ItemsPerThread], int block_items_end) {
        if (Algorithm == BLOCK_STORE_STRIPED) StoreDirectStriped<BLOCK_THREADS>(linear_tid, dst, items, block_items_end);
        else StoreDirectBlocked(linear_tid, dst, items, block_items_end);
    }
};

}  // namespace cub
