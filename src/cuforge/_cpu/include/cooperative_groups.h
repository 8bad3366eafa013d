// Cooperative groups for cuforge's CPU backend (CUDA's own header is device code only): thread
// blocks, warp tiles with their collectives, the grid of a cooperative launch and clusters.
#pragma once
#include "cuforge_cpu.h"

namespace cooperative_groups {

inline unsigned cf_linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned cf_block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

class thread_block {
public:
    void sync() const { __syncthreads(); }
    unsigned thread_rank() const { return cf_linear_thread(); }
    unsigned size() const { return cf_block_threads(); }
    unsigned num_threads() const { return cf_block_threads(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 dim_threads() const { return blockDim; }
    dim3 group_dim() const { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }

template <unsigned N> class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tiled_partition<N>: N must be a power of 2 up to 32");
    static unsigned base() { return cuforge_cpu::lane_id() & ~(N - 1); }

public:
    static unsigned mask() { return N == 32 ? 0xffffffffu : ((1u << N) - 1) << base(); }
    void sync() const { __syncwarp(mask()); }
    unsigned thread_rank() const { return cuforge_cpu::lane_id() & (N - 1); }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return cf_linear_thread() / N; }
    unsigned meta_group_size() const { return (cf_block_threads() + N - 1) / N; }
    template <class T> T shfl(T v, int src) const { return __shfl_sync(mask(), v, src, int(N)); }
    template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(mask(), v, d, int(N)); }
    template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(mask(), v, d, int(N)); }
    template <class T> T shfl_xor(T v, unsigned m) const { return __shfl_xor_sync(mask(), v, int(m), int(N)); }
    int any(int p) const { return __any_sync(mask(), p); }
    int all(int p) const { return __all_sync(mask(), p); }
    unsigned ballot(int p) const { return __ballot_sync(mask(), p) >> base(); }
    template <class T> unsigned match_any(T v) const { return __match_any_sync(mask(), v) >> base(); }
};
template <unsigned N, class Parent> thread_block_tile<N> tiled_partition(const Parent&) { return thread_block_tile<N>(); }

class grid_group {
public:
    void sync() const { cuforge_cpu::barrier(1, cuforge_cpu::B_GROUP); }
    bool is_valid() const { return cuforge_cpu::worker().L->cooperative != 0; }
    unsigned long long block_rank() const {
        return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    unsigned long long num_blocks() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    unsigned long long thread_rank() const { return block_rank() * cf_block_threads() + cf_linear_thread(); }
    unsigned long long num_threads() const { return num_blocks() * cf_block_threads(); }
    unsigned long long size() const { return num_threads(); }
    dim3 dim_blocks() const { return gridDim; }
    dim3 group_dim() const { return gridDim; }
    dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
};
inline grid_group this_grid() { return grid_group(); }

class cluster_group {
public:
    void sync() const { cuforge_cpu::barrier(1, cuforge_cpu::B_GROUP); }
    unsigned block_rank() const { return cuforge_cpu::cluster_block_rank(); }
    unsigned num_blocks() const {
        return cuforge_cpu::cluster_dim(0) * cuforge_cpu::cluster_dim(1) * cuforge_cpu::cluster_dim(2);
    }
    dim3 dim_blocks() const { return dim3(cuforge_cpu::cluster_dim(0), cuforge_cpu::cluster_dim(1), cuforge_cpu::cluster_dim(2)); }
    dim3 block_index() const {
        return dim3(blockIdx.x % cuforge_cpu::cluster_dim(0), blockIdx.y % cuforge_cpu::cluster_dim(1),
                    blockIdx.z % cuforge_cpu::cluster_dim(2));
    }
    unsigned thread_rank() const { return block_rank() * cf_block_threads() + cf_linear_thread(); }
    unsigned num_threads() const { return num_blocks() * cf_block_threads(); }
    template <class T> T* map_shared_rank(T* addr, unsigned rank) const { return cuforge_cpu::map_shared_rank(addr, rank); }
};
inline cluster_group this_cluster() { return cluster_group(); }

template <class Group> inline void sync(const Group& g) { g.sync(); }

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

// cg::reduce over a warp tile: every lane gets the result (a butterfly of shfl_xor).
template <unsigned N, class T, class Op> inline T reduce(const thread_block_tile<N>& g, T v, Op op) {
    for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, o));
    return v;
}
// cg::inclusive_scan / exclusive_scan over a warp tile (Hillis-Steele with shfl_up).
template <unsigned N, class T, class Op> inline T inclusive_scan(const thread_block_tile<N>& g, T v, Op op) {
    for (unsigned d = 1; d < N; d <<= 1) {
        T up = g.shfl_up(v, d);
        if (g.thread_rank() >= d) v = op(v, up);
    }
    return v;
}
template <unsigned N, class T> inline T inclusive_scan(const thread_block_tile<N>& g, T v) { return inclusive_scan(g, v, plus<T>()); }
template <unsigned N, class T, class Op> inline T exclusive_scan(const thread_block_tile<N>& g, T v, Op op) {
    T inc = inclusive_scan(g, v, op);
    T prev = g.shfl_up(inc, 1);
    return g.thread_rank() == 0 ? T() : prev;
}
template <unsigned N, class T> inline T exclusive_scan(const thread_block_tile<N>& g, T v) { return exclusive_scan(g, v, plus<T>()); }

}  // namespace cooperative_groups
