// Cooperative groups for cuforge's CPU backend (CUDA's own header is device code only): thread
// blocks, warp tiles with their collectives, coalesced and labeled groups, thread_group (any
// of them, by value), the grid of a cooperative launch and clusters.
#pragma once
#include "cuforge_cpu.h"

namespace cuforge_cpu {
inline unsigned nth_lane(unsigned mask, unsigned n) {  // the lane of the n-th (from 0) bit of mask
    for (; n && mask; --n) mask &= mask - 1;
    return mask ? unsigned(__builtin_ctz(mask)) : 32;
}
inline unsigned pack_lanes(unsigned bits, unsigned mask) {  // bits of mask's lanes, by rank
    unsigned out = 0, r = 0;
    for (; mask; mask &= mask - 1, ++r)
        if (bits >> __builtin_ctz(mask) & 1) out |= 1u << r;
    return out;
}
}  // namespace cuforge_cpu

namespace cooperative_groups {

inline unsigned cf_linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned cf_block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

class thread_block {
public:
    void sync(CF_AT) const { __syncthreads(cf_file, cf_line); }
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
    static unsigned get_mask() { return mask(); }
    void sync(CF_AT) const { __syncwarp(mask(), cf_file, cf_line); }
    unsigned thread_rank() const { return cuforge_cpu::lane_id() & (N - 1); }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return cf_linear_thread() / N; }
    unsigned meta_group_size() const { return (cf_block_threads() + N - 1) / N; }
    template <class T> T shfl(T v, int src, CF_AT) const { return __shfl_sync(mask(), v, src, int(N), cf_file, cf_line); }
    template <class T> T shfl_down(T v, unsigned d, CF_AT) const {
        return __shfl_down_sync(mask(), v, d, int(N), cf_file, cf_line);
    }
    template <class T> T shfl_up(T v, unsigned d, CF_AT) const { return __shfl_up_sync(mask(), v, d, int(N), cf_file, cf_line); }
    template <class T> T shfl_xor(T v, unsigned m, CF_AT) const {
        return __shfl_xor_sync(mask(), v, int(m), int(N), cf_file, cf_line);
    }
    int any(int p, CF_AT) const { return __any_sync(mask(), p, cf_file, cf_line); }
    int all(int p, CF_AT) const { return __all_sync(mask(), p, cf_file, cf_line); }
    unsigned ballot(int p, CF_AT) const { return __ballot_sync(mask(), p, cf_file, cf_line) >> base(); }
    template <class T> unsigned match_any(T v, CF_AT) const { return __match_any_sync(mask(), v, cf_file, cf_line) >> base(); }
};
template <unsigned N, class Parent> thread_block_tile<N> tiled_partition(const Parent&) { return thread_block_tile<N>(); }

// Some lanes of one warp, by mask: coalesced_threads(), labeled_partition and binary_partition.
// Ranks count the group's lanes from the lowest.
class coalesced_group {
    unsigned mask_;
    unsigned lane_of(unsigned rank) const { return cuforge_cpu::nth_lane(mask_, rank % size()); }

public:
    explicit coalesced_group(unsigned mask) : mask_(mask) {}
    unsigned get_mask() const { return mask_; }
    void sync(CF_AT) const { __syncwarp(mask_, cf_file, cf_line); }
    unsigned size() const { return unsigned(__builtin_popcount(mask_)); }
    unsigned num_threads() const { return size(); }
    unsigned thread_rank() const { return unsigned(__builtin_popcount(mask_ & __lanemask_lt())); }
    unsigned meta_group_rank() const { return 0; }
    unsigned meta_group_size() const { return 1; }
    template <class T> T shfl(T v, unsigned src_rank, CF_AT) const {
        return __shfl_sync(mask_, v, int(lane_of(src_rank)), warpSize, cf_file, cf_line);
    }
    template <class T> T shfl_down(T v, unsigned d, CF_AT) const {
        unsigned r = thread_rank() + d;
        return __shfl_sync(mask_, v, int(r < size() ? lane_of(r) : cuforge_cpu::lane_id()), warpSize, cf_file, cf_line);
    }
    template <class T> T shfl_up(T v, unsigned d, CF_AT) const {
        unsigned r = thread_rank();
        return __shfl_sync(mask_, v, int(r >= d ? lane_of(r - d) : cuforge_cpu::lane_id()), warpSize, cf_file, cf_line);
    }
    int any(int p, CF_AT) const { return __any_sync(mask_, p, cf_file, cf_line); }
    int all(int p, CF_AT) const { return __all_sync(mask_, p, cf_file, cf_line); }
    unsigned ballot(int p, CF_AT) const { return cuforge_cpu::pack_lanes(__ballot_sync(mask_, p, cf_file, cf_line), mask_); }
    template <class T> unsigned match_any(T v, CF_AT) const {
        return cuforge_cpu::pack_lanes(__match_any_sync(mask_, v, cf_file, cf_line), mask_);
    }
};
inline coalesced_group coalesced_threads() { return coalesced_group(cuforge_cpu::coalesced_lanes("coalesced_threads")); }
// The lanes of `g` with the same label, each group of them apart.
template <class Group> coalesced_group labeled_partition(const Group& g, int label) {
    return coalesced_group(__match_any_sync(g.get_mask(), label));
}
template <class Group> coalesced_group binary_partition(const Group& g, bool pred) {
    unsigned yes = __ballot_sync(g.get_mask(), pred);
    return coalesced_group(pred ? yes : g.get_mask() & ~yes);
}

// Any group of a block's threads, by value: the whole block, or lanes of one warp (a tile, a
// coalesced group); what CUDA's thread_group base class gives a function taking any of them.
class thread_group {
    unsigned mask_, size_;  // size_ 0: the whole block
    thread_group(unsigned mask, unsigned size) : mask_(mask), size_(size) {}
    friend thread_group tiled_partition(const thread_group& parent, unsigned n);

public:
    thread_group(const thread_block&) : mask_(0), size_(0) {}
    template <unsigned N> thread_group(const thread_block_tile<N>& t) : mask_(t.mask()), size_(N) {}
    thread_group(const coalesced_group& g) : mask_(g.get_mask()), size_(g.size()) {}
    void sync(CF_AT) const {
        if (size_) __syncwarp(mask_, cf_file, cf_line);
        else __syncthreads(cf_file, cf_line);
    }
    unsigned size() const { return size_ ? size_ : cf_block_threads(); }
    unsigned num_threads() const { return size(); }
    unsigned thread_rank() const {
        return size_ ? unsigned(__builtin_popcount(mask_ & __lanemask_lt())) : cf_linear_thread();
    }
    unsigned get_mask() const { return mask_; }
    bool is_valid() const { return true; }
};
// tiled_partition(parent, n): the parent's threads, by rank, in tiles of n (a power of 2 up to 32).
inline thread_group tiled_partition(const thread_group& parent, unsigned n) {
    if (n < 1 || n > 32 || (n & (n - 1)))
        cuforge_cpu::fail(CF_BLOCK_FMT ": thread %u called tiled_partition(group, %u); the tile size must be a power of "
                          "2 from 1 to 32", CF_BLOCK_ARGS, cuforge_cpu::worker().cur, n);
    unsigned lane = cuforge_cpu::lane_id();
    unsigned from = parent.size_ ? parent.mask_ : 0xffffffffu;  // (a block's warp: its lanes, by lane)
    unsigned first = (unsigned(__builtin_popcount(from & ((1u << lane) - 1))) & ~(n - 1)), mask = 0;
    for (unsigned r = first; r < first + n; ++r) {
        unsigned l = cuforge_cpu::nth_lane(from, r);
        if (l < 32) mask |= 1u << l;
    }
    return thread_group(mask, unsigned(__builtin_popcount(mask)));
}

class grid_group {
public:
    void sync(CF_AT) const { (void)cf_file, (void)cf_line, cuforge_cpu::barrier(1, cuforge_cpu::B_GROUP); }
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
    void sync(CF_AT) const { (void)cf_file, (void)cf_line, cuforge_cpu::barrier(1, cuforge_cpu::B_GROUP); }
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

template <class Group> inline void sync(const Group& g, CF_AT) { g.sync(cf_file, cf_line); }

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

// The same over a coalesced group (coalesced_threads(), labeled_partition, binary_partition),
// whose lanes need not be contiguous: each lane reads every rank's value, in rank order.
template <class T, class Op> inline T reduce(const coalesced_group& g, T v, Op op) {
    T acc = g.shfl(v, 0);
    for (unsigned r = 1; r < g.size(); ++r) acc = op(acc, g.shfl(v, r));
    return acc;
}
template <class T, class Op> inline T inclusive_scan(const coalesced_group& g, T v, Op op) {
    T acc = g.shfl(v, 0);
    for (unsigned r = 1; r < g.size(); ++r) {
        T other = g.shfl(v, r);
        if (r <= g.thread_rank()) acc = op(acc, other);
    }
    return acc;
}
template <class T> inline T inclusive_scan(const coalesced_group& g, T v) { return inclusive_scan(g, v, plus<T>()); }
template <class T, class Op> inline T exclusive_scan(const coalesced_group& g, T v, Op op) {
    T inc = inclusive_scan(g, v, op);
    T prev = g.shfl_up(inc, 1);
    return g.thread_rank() == 0 ? T() : prev;
}
template <class T> inline T exclusive_scan(const coalesced_group& g, T v) { return exclusive_scan(g, v, plus<T>()); }

}  // namespace cooperative_groups
