// cuforge CPU backend: what its CUB headers share. CUB itself is written in PTX and GPU
// intrinsics; these headers give its block and warp reductions and scans (cub::BlockReduce,
// BlockScan, WarpReduce, WarpScan) with CUB's interface and results, written over the backend's
// __syncthreads and warp shuffles. Their TempStorage is used as CUB's is (a block's collective
// writes it, a barrier, then reads it), so that a kernel that reuses one without a __syncthreads()
// between races here as on a GPU, and the checked mode reports it. A reduction's result is
// defined in the first thread (or lane) only, as CUB's; the others get what CUB's algorithm
// leaves them (a warp's partial result).
#pragma once
#include <cstring>
#include <new>
#include <type_traits>
#include <cuda/functional>
#include <cuda/std/functional>

// Every function here is inlined into the kernel, as CUB's are (_CCCL_FORCEINLINE): so a report
// inside one names the kernel's line that called it (cuforge/_cpu/check.py follows inlined frames).
#define CF_CUB_INLINE __attribute__((always_inline)) inline

namespace cub {

// CUB's wrapper of a TempStorage's layout: its bytes, and Alias() to read them as the layout.
template <class T> struct Uninitialized {
    alignas(T) unsigned char storage[sizeof(T)];
    CF_CUB_INLINE T& Alias() { return *reinterpret_cast<T*>(this); }
};
struct NullType {};

CF_CUB_INLINE unsigned RowMajorTid(int block_dim_x, int block_dim_y, int block_dim_z) {
    return (block_dim_z == 1 ? 0 : threadIdx.z * block_dim_x * block_dim_y) + (block_dim_y == 1 ? 0 : threadIdx.y * block_dim_x) +
           threadIdx.x;
}
CF_CUB_INLINE unsigned LaneId() { return cuforge_cpu::lane_id(); }

namespace cuforge_cpu_detail {

CF_CUB_INLINE unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
CF_CUB_INLINE unsigned linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

// Where a collective is called in the kernel (its methods' default argument): what a report of
// its misuse names.
struct Site {
    const char* file;
    unsigned line;
    static CF_CUB_INLINE Site here(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) { return Site{file, line}; }
};

// A value of lane `src` of `mask` (any trivially copyable type: one of up to 8 bytes as it is,
// a larger one in 8-byte words, as CUB moves them), `at` the collective's call.
template <class T> CF_CUB_INLINE T shfl(unsigned mask, const T& v, unsigned src, Site at = Site{nullptr, 0}) {
    static_assert(std::is_trivially_copyable<T>::value, "cub (cuforge's CPU backend): a warp collective's type must be "
                                                        "trivially copyable");
    if constexpr (sizeof(T) <= 8) {
        return __shfl_sync(mask, v, int(src), warpSize, at.file, at.line);
    } else {
        constexpr size_t words = (sizeof(T) + 7) / 8;
        unsigned long long in[words] = {}, out[words];
        memcpy(in, &v, sizeof(T));
        for (size_t k = 0; k < words; ++k) out[k] = __shfl_sync(mask, in[k], int(src), warpSize, at.file, at.line);
        alignas(T) unsigned char bytes[sizeof(T)];
        memcpy(bytes, out, sizeof(T));
        return *std::launder(reinterpret_cast<T*>(bytes));
    }
}

// The logical warp of `width` lanes (CUB's LOGICAL_WARP_THREADS) that holds this thread, of the
// `threads` of a block that exist (a block's last warp can be partial): this thread's lane in
// it, its first lane in the hardware warp, how many of its lanes exist, and their mask.
struct Warp {
    unsigned lane, base, count, mask;
    Site at;  // (the collective's call, where known)
    template <class T> CF_CUB_INLINE T from(const T& v, unsigned lane_of_logical) const { return shfl(mask, v, base + lane_of_logical, at); }
};
template <int Width> CF_CUB_INLINE Warp logical_warp(unsigned threads) {
    static_assert(Width >= 1 && Width <= 32, "cub: a logical warp has 1 to 32 threads");
    unsigned hw = cuforge_cpu::lane_id(), base = hw / Width * Width, lane = hw - base;
    unsigned first = linear_thread() - lane;
    unsigned count = first < threads ? (threads - first < unsigned(Width) ? threads - first : unsigned(Width)) : 0;
    unsigned mask = (count >= 32 ? 0xffffffffu : (1u << count) - 1) << base;
    return Warp{lane, base, count, mask, Site{nullptr, 0}};
}

// A reduction over a logical warp, the result in its lane 0: each step adds the lane `offset`
// further on, among the first `valid` lanes (CUB's shuffle-down reduction, in its order).
template <int Width, class T, class Op> CF_CUB_INLINE T warp_reduce(const Warp& w, T v, Op op, int valid) {
    for (int offset = 1; offset < Width; offset <<= 1) {
        unsigned src = w.lane + unsigned(offset) < w.count ? w.lane + unsigned(offset) : w.lane;
        T other = w.from(v, src);
        if (int(w.lane) + offset < valid) v = op(v, other);
    }
    return v;
}

// An inclusive scan over a logical warp (shuffles up), and the exclusive one (lane 0's: undefined).
template <int Width, class T, class Op> CF_CUB_INLINE void warp_scan(const Warp& w, T v, T& inclusive, T& exclusive, Op op) {
    for (int d = 1; d < Width; d <<= 1) {
        T up = w.from(v, w.lane >= unsigned(d) ? w.lane - unsigned(d) : w.lane);
        if (w.lane >= unsigned(d)) v = op(up, v);
    }
    inclusive = v;
    exclusive = w.from(v, w.lane ? w.lane - 1 : 0);
}

template <int N, class T, class Op> CF_CUB_INLINE T thread_reduce(const T (&in)[N], Op op) {
    T p = in[0];
    for (int i = 1; i < N; ++i) p = op(p, in[i]);
    return p;
}
// CUB's ThreadScanExclusive and ThreadScanInclusive: a thread's items after its prefix.
template <int N, class T, class Op> CF_CUB_INLINE void thread_scan_exclusive(const T (&in)[N], T (&out)[N], Op op, T prefix, bool apply) {
    T inclusive = apply ? T(op(prefix, in[0])) : in[0];
    out[0] = prefix;
    for (int i = 1; i < N; ++i) {
        T exclusive = inclusive;
        inclusive = op(exclusive, in[i]);
        out[i] = exclusive;
    }
}
template <int N, class T, class Op> CF_CUB_INLINE void thread_scan_inclusive(const T (&in)[N], T (&out)[N], Op op, T prefix, bool apply) {
    T inclusive = apply ? T(op(prefix, in[0])) : in[0];
    out[0] = inclusive;
    for (int i = 1; i < N; ++i) out[i] = inclusive = op(inclusive, in[i]);
}

// Where a collective is called (its default arguments': the kernel's line), for a report.

// A reduction's result, which CUB defines in its first thread (or lane) only: in a checked build,
// a number elsewhere is an undefined value, as a shuffle's undefined lane is (cuforge/cpu_check.h's
// undefined_value: a marked NaN, reported if it reaches an array the kernel writes; in the reruns,
// other values). Elsewhere, what CUB's algorithm leaves there (a warp's partial result).
template <class T> CF_CUB_INLINE T defined_in_first(T v, bool first, const char* what, Site at) {
#ifdef CUFORGE_CPU_CHECK
    if constexpr (std::is_arithmetic<T>::value && sizeof(T) <= 8) {
        if (!first) return cuforge_cpu::undefined_value<T>(cuforge_cpu::to_bits(v), cuforge_check_undefined(what, at.file, at.line, 0));
    }
#else
    (void)first, (void)what, (void)at;
#endif
    return v;
}

// A block collective's template names its block's size, which must be the launch's (CUB
// reads and writes its TempStorage by warp; a GPU gives no error, only wrong results or worse).
// `at_most`: the block may be smaller (a reduction of num_valid items, which uses the warps that
// hold them only: vLLM's BlockReduce<float, 1024> over a block of min(hidden, 1024) threads).
CF_CUB_INLINE void check_block(const char* collective, int threads, bool at_most = false) {
    int have = int(block_threads());
    if (__builtin_expect(at_most ? have > threads : have != threads, 0))
        cuforge_cpu::fail(CF_BLOCK_FMT ": %s's BlockDimX * BlockDimY * BlockDimZ is %d threads, but the block has %u; name "
                          "the launch's block in its template arguments", CF_BLOCK_ARGS, collective, threads, block_threads());
}

// A value put in a collective's TempStorage slot whole, padding included (a checked build's memcpy
// tells the checker of every byte), as CUB's own store of the object does: a struct assigned
// member by member (a KeyValuePair<long long, float>) would leave its padding unwritten for the
// slot's later read as one object.
template <class T> CF_CUB_INLINE void put(T& slot, const T& v) {
    if constexpr (std::is_trivially_copyable<T>::value)
        memcpy(static_cast<void*>(&slot), static_cast<const void*>(&v), sizeof(T));
    else
        slot = v;
}

// The TempStorage layout of CUB's BlockExchange, which a BlockLoad or BlockStore that transposes
// uses: the real one's size and alignment (cub/block/block_exchange.cuh), so that code that carves
// dynamic shared memory by sizeof(TempStorage) puts what follows where it lands on a GPU (the
// CPU's loads and stores read and write directly and leave it alone).
template <class T, int Threads, int Items, bool TimeSliced> struct alignas(16) ExchangeLayout {
    static constexpr int SLICED = (TimeSliced && Threads > 32 ? 32 : Threads) * Items;
    static constexpr bool PADDED = Items > 4 && (Items & (Items - 1)) == 0;
    T buff[SLICED + (PADDED ? SLICED >> 5 : 0)];
};
// BlockStore's: the exchange's and the guard's count of valid items.
template <class T, int Threads, int Items, bool TimeSliced> struct StoreLayout : ExchangeLayout<T, Threads, Items, TimeSliced> {
    volatile int valid_items;
};

// A collective's own shared memory (its default constructor's), placed as a __shared__
// declaration of the kernel's is (cuforge/_cpu/translate.py).
template <class Layout> CF_CUB_INLINE Layout& private_storage(const char* name) {
#ifdef CUFORGE_CPU_CHECK
    static const size_t at = cuforge_cpu::check_shared_offset(sizeof(Layout), alignof(Layout), sizeof(Layout), name);
#else
    static const size_t at = cuforge_cpu::static_shared_offset(sizeof(Layout), alignof(Layout));
#endif
    return *reinterpret_cast<Layout*>(cuforge_cpu::block_shared(at, sizeof(Layout), name));
}

}  // namespace cuforge_cpu_detail
}  // namespace cub
