// cuforge_cpu.h: the CUDA built-ins for a kernel compiled for the host (cuforge's CPU backend).
//
// A kernel's rendered CUDA C++ is compiled with this header first. A launch runs each block on
// one worker thread of cuforge's pool (_cpu/runtime.cpp). A block's threads run as a plain loop,
// one after the other, until one of them reaches a barrier or a warp function; from then on
// that block's threads are fibers on that worker, switched by hand (save the callee-saved
// registers and the stack pointer, load the other's) at each barrier and warp function, so that
// a barrier waits for every thread of the block and a shuffle sees every lane's value.
//
// Per-thread state (threadIdx, ...) is the worker's: each switch restores the resumed thread's
// copy. A worker's state sits at the start of its memory region, whose fiber stacks every
// kernel's code runs on, so it is found from the stack pointer (no thread-local lookup); a
// program with no barrier or warp function keeps its built-ins in thread-locals instead (see
// CUFORGE_CPU_PLAIN). __shared__ declarations are rewritten by _cpu/translate.py into references
// into the running block's arena; each block of a cooperative or clustered launch runs on a
// thread of its own, with its own arena.
#pragma once
#define CUFORGE_CPU 1
#include <crt/host_defines.h>
#include <atomic>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <csignal>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <exception>
#include <mutex>
#if defined(__GLIBCXX__)
#include <cxxabi.h>  // abi::__forced_unwind
#endif
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector_types.h>
#include <vector_functions.h>

#define CF_EXPORT __attribute__((visibility("default")))
// Module variables stay visible in the kernel library (built with hidden visibility), so that
// set_global/get_global find them by name, as cuLibraryGetGlobal does.
#undef __constant__
#undef __device__
#define __constant__ CF_EXPORT
#define __device__ CF_EXPORT

#include "cuforge_cpu_abi.h"

static constexpr int warpSize = 32;

// A checked build (cuforge/cpu_check.h) is told of each barrier and __syncwarp that completes.
#ifdef CUFORGE_CPU_CHECK
extern "C" CUFORGE_CPU_API void cuforge_check_sync(int what, unsigned warp);
extern "C" CUFORGE_CPU_API int cuforge_check_prints();  // (not in a rerun of the launch: the first run printed)
#define CF_CHECK_SYNC(what, warp) cuforge_check_sync(what, warp)
// The runtime's own bookkeeping (the plain loop's, the fibers' and barriers') is cuforge's, not
// the kernel's: left uninstrumented, it costs a checked launch no call per access.
#define CF_RUNTIME __attribute__((no_sanitize_thread, no_sanitize("alignment", "bounds")))
#else
#define CF_CHECK_SYNC(what, warp) ((void)0)
#define CF_RUNTIME
#endif
// Small helpers inlined into the runtime's uninstrumented code and the kernel's instrumented code
// alike (GCC inlines neither kind into the other, always_inline aside; GCC 12 takes always_inline
// across the two, and compilers before it are not known to: there they stay calls).
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define CF_ANY_INLINE __attribute__((always_inline)) inline
#else
#define CF_ANY_INLINE inline
#endif

namespace cuforge_cpu {

constexpr size_t STACK = CUFORGE_CPU_STACK;   // each CUDA thread's stack once on a fiber: at least this
constexpr size_t STRIDE = CUFORGE_CPU_STACK_STRIDE;  // from one fiber's stack to the next (see cuforge_cpu_abi.h)
constexpr size_t STATIC_SHARED = CUFORGE_CPU_STATIC_SHARED;  // static __shared__ of every kernel of one library
constexpr size_t SHARED_ALIGN = 1024;         // dynamic shared memory's alignment
constexpr unsigned MAX_THREADS = CUFORGE_CPU_MAX_THREADS;

// ---------------------------------------------------------------- fibers (x86-64 SysV)
extern "C" void cuforge_cpu_switch(void** save, void* to);
extern "C" void cuforge_cpu_boot();
#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".p2align 4\n"
    "cuforge_cpu_switch:\n"  // (void** save, void* to): park here, resume `to`
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".p2align 4\n"
    "cuforge_cpu_boot:\n"  // a new fiber's first return lands here: fn(arg0, arg1)
    "  movq %r12, %rdi\n  movq %r13, %rsi\n  callq *%r14\n  ud2\n");
#else
#error "cuforge's CPU backend switches fibers with x86-64 code; this machine is not x86-64"
#endif

// A fiber's first stack: what cuforge_cpu_switch pops, then cuforge_cpu_boot as return address.
// Each fiber's top is moved down by a different number of cache lines (within CUFORGE_CPU_STAGGER,
// so that every fiber keeps STACK bytes): stacks STRIDE bytes apart would otherwise put every
// fiber's frames in the same cache sets, which the switches thrash.
inline void* fiber_stack(char* base, size_t size, void (*fn)(void*, unsigned), void* a0, unsigned a1) {
    static_assert(CUFORGE_CPU_STAGGER % 128 == 0, "the stagger is in cache lines");
    uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size - (a1 % (CUFORGE_CPU_STAGGER / 128)) * 128) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top - 72);  // so that the call in boot is 16-byte aligned
    sp[0] = nullptr;                                  // r15
    sp[1] = reinterpret_cast<void*>(fn);              // r14
    sp[2] = reinterpret_cast<void*>(uintptr_t(a1));   // r13
    sp[3] = a0;                                       // r12
    sp[4] = nullptr;                                  // rbx
    sp[5] = nullptr;                                  // rbp
    sp[6] = reinterpret_cast<void*>(&cuforge_cpu_boot);
    return sp;
}

// ---------------------------------------------------------------- one worker's block state
enum State : unsigned char { FRESH, READY, WAIT_BAR, WAIT_WARP, DONE };
enum WarpKind : int { W_SYNC, W_IDX, W_UP, W_DOWN, W_XOR, W_BALLOT, W_ANY, W_ALL, W_MATCH_ANY, W_MATCH_ALL,
                      W_ADD, W_MIN, W_MAX, W_UMIN, W_UMAX, W_AND, W_OR, W_XORR };
static const char* const WARP_NAMES[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
    "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync", "__match_all_sync",
    "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_min_sync", "__reduce_max_sync",
    "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync"};

struct WarpOp {  // the warp function a lane waits at
    int kind;
    unsigned mask;
    int width;
    const char* file;  // where it is called (null: not known)
    unsigned line;
};
// A warp's lanes waiting at warp functions. Each lane waits at one at most, so the lanes'
// values and results are kept by lane. A function completes when every lane of its mask waits
// at it; lanes outside the mask go on meanwhile (sm_70's independent thread scheduling).
struct Warp {
    WarpOp op[32];
    unsigned waiting;  // the lanes parked at a warp function
    unsigned coalescing;  // the lanes in cooperative_groups::coalesced_threads() (cooperative_groups.h)
    unsigned undefined;   // the lanes whose shuffle read a lane outside its mask or past the block (src: which)
    unsigned long long value[32];
    int arg[32];
    unsigned long long out[32];
    unsigned char src[32];
};

struct Fiber {
    void* sp;
    unsigned char state;
};

typedef void (*ThreadFn)(void**);

// At the start of each worker thread's region (zero-filled when mapped): the same layout for
// every kernel library of a process, which are built from this header's one version.
struct Worker {
    uint3 thread_idx, block_idx, block_dim, grid_dim;  // threadIdx, blockIdx, blockDim, gridDim
    cuforge_cpu_launch* L;
    ThreadFn thread_fn;
    sigjmp_buf jump;
    // the block range this call runs, and the plain loop's position in it
    long long b, last;
    unsigned n;        // threads per block
    unsigned cur;      // the running thread (linear index)
    bool fibers;       // this block's threads are on fibers
    bool block_done;
    bool plain;        // compiled as a plain loop: the source names no barrier or warp function
    unsigned exited;
    unsigned bar_arrived, bar_gen;
    int bar_acc[2], bar_res[2];
    unsigned bar_met[2];   // the threads a completed barrier waited for (__syncthreads_and's count)
    bool bar_group;        // the barrier threads wait at is a grid.sync() or cluster.sync()
    const char* bar_file;  // where the first thread to arrive called __syncthreads (for messages)
    unsigned bar_line;
    Fiber* f;
    char* stacks;       // MAX_THREADS + 1 stacks (the last is the plain loop's)
    void* runner;       // the worker's own context, parked while fibers run
    Warp warps[MAX_THREADS / 32];
    char* shared;       // this block's arena: static, then dynamic from STATIC_SHARED
    const void* poll_at;  // the address the running thread's last atomics updated, and how many in a row
    unsigned poll_thread, polls;  // (cuforge/cpu_atomic.h: a spin lets the block's other threads run)
    void* check;  // an indexed checked build's: the checker's state of the block (cuforge/cpu_check.h's indexed_block)
};

static_assert(sizeof(Worker) <= CUFORGE_CPU_HEADER, "the worker's state must fit its region's header");

// The worker whose fiber stack this code runs on (kernel code runs on nothing else).
CF_ANY_INLINE Worker& worker() {
    uintptr_t sp;
    __asm__("movq %%rsp, %0" : "=r"(sp));  // (not volatile: one read serves a whole function)
    return *reinterpret_cast<Worker*>(sp & ~uintptr_t(CUFORGE_CPU_REGION - 1));
}
}  // namespace cuforge_cpu
#ifdef CUFORGE_CPU_PLAIN
// A program with no barrier or warp function (translate.py defines this): its threads are a
// plain loop, whose built-ins are thread-locals the compiler knows no store to an array reaches,
// so that it vectorizes the loop (one lookup per function: nothing switches in between).
namespace cuforge_cpu {
namespace {
thread_local uint3 plain_thread_idx, plain_block_idx, plain_block_dim, plain_grid_dim;
}
}  // namespace cuforge_cpu
#define CF_THREAD_IDX (::cuforge_cpu::plain_thread_idx)
#define CF_BLOCK_IDX (::cuforge_cpu::plain_block_idx)
#define CF_BLOCK_DIM (::cuforge_cpu::plain_block_dim)
#define CF_GRID_DIM (::cuforge_cpu::plain_grid_dim)
#else
#define CF_THREAD_IDX (::cuforge_cpu::worker().thread_idx)
#define CF_BLOCK_IDX (::cuforge_cpu::worker().block_idx)
#define CF_BLOCK_DIM (::cuforge_cpu::worker().block_dim)
#define CF_GRID_DIM (::cuforge_cpu::worker().grid_dim)
#endif
#if defined(CUFORGE_CPU_CHECK) && !defined(CUFORGE_CPU_CHECK_INDEXED)  // (an indexed build is not instrumented)
namespace cuforge_cpu {
// A checked build's built-ins are read in an asm, which the instrumentation does not see: they
// are cuforge's, not the kernel's memory, and a call to the checker per read was a sixth of a
// checked saxpy's time. (The asm names its operands' memory: the compiler orders it with the
// runtime's stores to them as it would a load.)
inline uint3 quiet(const uint3& v) {
    unsigned x, y, z;
    __asm__("movl %3, %0\n\tmovl %4, %1\n\tmovl %5, %2" : "=&r"(x), "=&r"(y), "=&r"(z) : "m"(v.x), "m"(v.y), "m"(v.z));
    return uint3{x, y, z};
}
}  // namespace cuforge_cpu
#define threadIdx (::cuforge_cpu::quiet(CF_THREAD_IDX))
#define blockIdx (::cuforge_cpu::quiet(CF_BLOCK_IDX))
#define blockDim (::cuforge_cpu::quiet(CF_BLOCK_DIM))
#define gridDim (::cuforge_cpu::quiet(CF_GRID_DIM))
#else
#define threadIdx CF_THREAD_IDX
#define blockIdx CF_BLOCK_IDX
#define blockDim CF_BLOCK_DIM
#define gridDim CF_GRID_DIM
#endif
namespace cuforge_cpu {

enum Status { FAILED = 1, FAULTED = 2, ASSERTED = 3 };  // cuforge_cpu_launch.status

// End this worker's blocks with an error: the first one of a launch is the one reported.
[[noreturn]] inline void vfail(int status, const char* fmt, va_list ap) {
    Worker& w = worker();
    if (__sync_bool_compare_and_swap(&w.L->status, 0, status)) vsnprintf(w.L->message, sizeof w.L->message, fmt, ap);
    siglongjmp(w.jump, 1);
}
[[noreturn]] inline void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] inline void fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(FAILED, fmt, ap);
}

CF_RUNTIME inline void set_thread(Worker& w, unsigned t) {
    unsigned bx = blockDim.x, by = blockDim.y;
    CF_THREAD_IDX.x = t % bx;
    CF_THREAD_IDX.y = (t / bx) % by;
    CF_THREAD_IDX.z = t / (bx * by);
    w.cur = t;
}

// "threads 3, 5-9 and 12" of a block, by linear index
inline void describe(char* out, size_t size, Worker& w, bool (*pick)(Worker&, unsigned, unsigned), unsigned arg) {
    size_t used = 0;
    out[0] = 0;
    for (unsigned t = 0; t < w.n && used + 24 < size;) {
        if (!pick(w, t, arg)) { ++t; continue; }
        unsigned e = t;
        while (e + 1 < w.n && pick(w, e + 1, arg)) ++e;
        used += snprintf(out + used, size - used, used ? ", %u" : "%u", t);
        if (e > t) used += snprintf(out + used, size - used, "-%u", e);
        t = e + 1;
    }
}
inline bool in_state(Worker& w, unsigned t, unsigned s) { return w.f[t].state == s; }

#define CF_BLOCK_FMT "block (%u, %u, %u)"
#define CF_BLOCK_ARGS blockIdx.x, blockIdx.y, blockIdx.z

inline bool several(const char* list) { return strpbrk(list, ",-") != nullptr; }  // a describe() list of 2+ threads

[[noreturn]] inline void deadlock(Worker& w) {
    char waiting[400], warp[400], exited[400];
    describe(waiting, sizeof waiting, w, in_state, WAIT_BAR);
    describe(warp, sizeof warp, w, in_state, WAIT_WARP);
    describe(exited, sizeof exited, w, in_state, DONE);
    if (!warp[0] && waiting[0] && exited[0]) {  // a divergent __syncthreads: every thread has waited there or exited
        char at[300] = "";
        if (w.bar_file) snprintf(at, sizeof at, " at %s, line %u", w.bar_file, w.bar_line);
        fail(CF_BLOCK_FMT ": %s%s%s %s at the __syncthreads%s, which %s%s%s exited without reaching; every thread of a "
             "block must reach each __syncthreads"
#ifdef CUFORGE_CPU_CHECK
             ", or none (CUDA's rule: a GPU since Volta lets the waiting threads go on once the others exited, and an "
             "unchecked CPU launch does too, but older GPUs and HIP's may hang): return after the barrier, or keep those "
             "threads to it under a guard (if (i < n) { ... })"
#endif
             , CF_BLOCK_ARGS, several(waiting) ? "threads [" : "thread ", waiting,
             several(waiting) ? "]" : "", several(waiting) ? "wait" : "waits", at,
             several(exited) ? "threads [" : "thread ", exited, several(exited) ? "]" : "");
    }
    fail(CF_BLOCK_FMT ": the block's threads can never all meet: threads waiting at __syncthreads: [%s]; threads "
         "waiting at a warp function: [%s]; threads that exited: [%s]. Every thread of a block must reach each "
         "__syncthreads (and every lane in a warp function's mask must reach it); on a GPU this hangs or is "
         "undefined", CF_BLOCK_ARGS, waiting, warp, exited);
}

void fiber_main(void* worker, unsigned t);

[[noreturn]] inline void plain_only(Worker& w, const char* what) {
    fail(CF_BLOCK_FMT ": thread %u called %s, but cuforge found no barrier or warp function in the kernel's source "
         "and compiled its threads as a plain loop; name the function in the source (not only in a header)",
         CF_BLOCK_ARGS, w.cur, what);
}

// Give the CPU to the next thread that can run (round robin), or back to the worker when the
// block is done; returns when this thread may go on.
CF_RUNTIME inline void park(Worker& w) {
    unsigned me = w.cur;
    uint3 mine = threadIdx;
    unsigned next = me;
    for (unsigned i = 1, t = me; i <= w.n; ++i) {
        if (++t == w.n) t = 0;
        if (w.f[t].state <= READY) { next = t; break; }  // FRESH or READY
    }
    if (next == me && w.f[me].state != READY) {
        if (w.exited == w.n) {  // the last thread exited: back to the worker
            w.block_done = true;
            cuforge_cpu_switch(&w.f[me].sp, w.runner);
            __builtin_unreachable();
        }
        deadlock(w);
    }
    if (next != me) {
        if (w.f[next].state == FRESH) {
            w.f[next].state = READY;
            w.f[next].sp = fiber_stack(w.stacks + size_t(next) * STRIDE, STRIDE, fiber_main, &w, next);
        }
        w.cur = next;
        cuforge_cpu_switch(&w.f[me].sp, w.f[next].sp);
    }
    w.cur = me;
    CF_THREAD_IDX = mine;
}

CF_RUNTIME inline void enter_fibers(Worker& w) {
    w.fibers = true;
    for (unsigned t = 0; t < w.n; ++t) w.f[t].state = t < w.cur ? DONE : t == w.cur ? READY : FRESH;
    w.exited = w.cur;
    w.bar_arrived = 0;
    for (unsigned i = 0; i < (w.n + 31) / 32; ++i) w.warps[i].waiting = w.warps[i].coalescing = 0;
}

inline bool same_op(const WarpOp& a, const WarpOp& b) { return a.kind == b.kind && a.mask == b.mask && a.width == b.width; }
inline unsigned waiting_at(const Warp& wp, const WarpOp& op) {  // the lanes waiting at `op`
    unsigned lanes = 0;
    for (unsigned p = wp.waiting; p; p &= p - 1)
        if (same_op(wp.op[__builtin_ctz(p)], op)) lanes |= p & -p;
    return lanes;
}

// " at FILE, line N" of a warp function's call, or "" where it is not known.
struct AtLine {
    char text[256];
};
inline AtLine at_line(const char* file, unsigned line) {
    AtLine a{};
    if (file) snprintf(a.text, sizeof a.text, " at %s, line %u", file, line);
    return a;
}

// t exits: may not leave a warp function waiting. A thread that leaves others waiting at a
// __syncthreads is not refused here: the block's other threads run on, so that when none can,
// deadlock() names every thread that waits there and every one that exited without reaching it.
CF_RUNTIME inline void check_exit(Worker& w, unsigned t) {
    Warp& wp = w.warps[t / 32];
    for (unsigned p = wp.waiting; p; p &= p - 1) {
        const WarpOp& op = wp.op[__builtin_ctz(p)];
        if (op.mask >> (t % 32) & 1)
            fail(CF_BLOCK_FMT ": thread %u (lane %u) exited without reaching the %s that lanes 0x%08x of its warp "
                 "wait at (mask 0x%08x)%s; every lane in the mask must reach it", CF_BLOCK_ARGS, t, t % 32,
                 WARP_NAMES[op.kind], waiting_at(wp, op), op.mask, at_line(op.file, op.line).text);
    }
}

CF_RUNTIME inline void release_barrier(Worker& w);
CF_RUNTIME inline unsigned bar_expected(const Worker& w);

CF_RUNTIME inline void exit_thread(Worker& w) {
    unsigned t = w.cur;
    check_exit(w, t);
    w.f[t].state = DONE;
    ++w.exited;
    if (w.bar_arrived && !w.bar_group && w.bar_arrived == bar_expected(w)) release_barrier(w);  // (the last it waited for)
    park(w);
    __builtin_unreachable();
}

CF_RUNTIME inline void fiber_main(void* worker, unsigned t) {
    Worker& w = *static_cast<Worker*>(worker);
    set_thread(w, t);
    w.thread_fn(w.L->args);
    exit_thread(w);
}

// ---------------------------------------------------------------- barriers
enum BarMode { B_PLAIN, B_COUNT, B_AND, B_OR, B_GROUP };

// grid.sync() / cluster.sync(): the block's last thread to arrive waits for the group's other blocks.
inline void group_wait(Worker& w) {
    char why[512];
    if (cuforge_cpu_group_sync(w.L, why, sizeof why))
        fail(CF_BLOCK_FMT ", thread %u: %s", CF_BLOCK_ARGS, w.cur, why);
}

#ifdef CUFORGE_CPU_CHECK
// A checked launch: threads of one block meet at two different __syncthreads (one in each arm of
// a branch), which the runtime would take for one barrier, as a GPU's hardware may.
[[noreturn]] inline void two_barriers(Worker& w, const char* file, unsigned line) {
    char waiting[400];
    describe(waiting, sizeof waiting, w, in_state, WAIT_BAR);
    fail(CF_BLOCK_FMT ": thread %u reached the __syncthreads at %s, line %u while %s%s%s %s at the __syncthreads at %s, "
         "line %u; every thread of a block must reach the same __syncthreads (one in each arm of a branch is two "
         "barriers, and on a GPU their meeting is undefined): move it after the branch", CF_BLOCK_ARGS, w.cur, file, line,
         several(waiting) ? "threads [" : "thread ", waiting, several(waiting) ? "]" : "", several(waiting) ? "wait" : "waits",
         w.bar_file, w.bar_line);
}
#endif

// The threads a __syncthreads waits for. On a GPU, a thread that exited holds no barrier up (PTX's
// exit releases a barrier that waits only for threads that exited), so a kernel whose threads out
// of range return early runs there, and in an unchecked launch as there. A checked launch waits
// for every thread of the block, and deadlock() reports those that exited without reaching it:
// CUDA's rule is that every thread of a block, or none, reaches each __syncthreads.
CF_RUNTIME inline unsigned bar_expected(const Worker& w) {
#ifdef CUFORGE_CPU_CHECK
    return w.n;
#else
    return w.n - w.exited;
#endif
}

// The barrier's last expected thread arrived (or exited): the threads waiting there go on.
CF_RUNTIME inline void release_barrier(Worker& w) {
    unsigned g = w.bar_gen & 1;
    w.bar_met[g] = w.bar_arrived;
    w.bar_arrived = 0;
    w.bar_res[g] = w.bar_acc[g];
    ++w.bar_gen;
    CF_CHECK_SYNC(3, 0);
    for (unsigned t = 0; t < w.n; ++t)
        if (w.f[t].state == WAIT_BAR) w.f[t].state = READY;
}

CF_RUNTIME inline int barrier(int predicate, BarMode mode, const char* file = nullptr, unsigned line = 0) {
    Worker& w = worker();
    if (w.n == 1) {
        if (mode == B_GROUP) group_wait(w), CF_CHECK_SYNC(1, 0);
        return predicate != 0;
    }
    if (!w.fibers) {
        if (w.plain) plain_only(w, "__syncthreads");
        enter_fibers(w);  // (threads before this one exited: the barrier can never complete; see check_exit)
    }
    unsigned g = w.bar_gen & 1;
    if (w.bar_arrived == 0) w.bar_acc[g] = 0, w.bar_file = file, w.bar_line = line, w.bar_group = mode == B_GROUP;
#ifdef CUFORGE_CPU_CHECK
    else if (file && w.bar_file && (line != w.bar_line || (file != w.bar_file && strcmp(file, w.bar_file) != 0))) two_barriers(w, file, line);
#endif
    w.bar_acc[g] += predicate != 0;
    // (a grid.sync() waits for every thread of the block: the group's other blocks wait for it)
    if (++w.bar_arrived == (mode == B_GROUP ? w.n : bar_expected(w))) {
        if (mode == B_GROUP) group_wait(w), CF_CHECK_SYNC(1, 0);
        release_barrier(w);
    } else {
        w.f[w.cur].state = WAIT_BAR;
        park(w);
    }
    int count = w.bar_res[g];
    return mode == B_COUNT ? count : mode == B_AND ? count == int(w.bar_met[g]) : mode == B_OR ? count > 0 : 0;
}

// ---------------------------------------------------------------- warp functions
inline unsigned lanes_of(const Worker& w, unsigned warp) {  // the lanes that exist in a (last, partial) warp
    unsigned left = w.n - warp * 32;
    return left >= 32 ? 0xffffffffu : (1u << left) - 1;
}

inline void warp_compute(Warp& wp, const WarpOp& op, unsigned live) {
    unsigned mask = op.mask & live;
    int width = op.width;
    unsigned seg = unsigned(32 - width);  // PTX shfl's segment mask, c[12:8]
    for (unsigned l = 0; l < 32; ++l) {
        if (!(mask >> l & 1)) continue;
        int b = wp.arg[l] & 31;  // the hardware reads the low 5 bits of a lane, delta or lane mask
        int lane = int(l), j = lane;
        int min_lane = lane & int(seg), max_lane = min_lane | (31 & ~int(seg));
        bool ok = false;
        switch (op.kind) {
        case W_IDX: j = min_lane | (b & ~int(seg)); ok = j <= max_lane; break;
        case W_UP: j = lane - b; ok = j >= min_lane; break;
        case W_DOWN: j = lane + b; ok = j <= max_lane; break;
        case W_XOR: j = lane ^ b; ok = j <= max_lane; break;
        default: break;
        }
        if (op.kind >= W_IDX && op.kind <= W_XOR) {
            // A lane past the segment reads its own value (PTX's shfl); one inside it that is not in
            // the mask, or past the block's last thread, reads a value that is undefined on a GPU.
            bool undefined = ok && j >= 0 && j <= 31 && !(mask >> j & 1);
            wp.undefined = (wp.undefined & ~(1u << l)) | unsigned(undefined) << l;
            wp.src[l] = (unsigned char)j;
            if (!ok || j < 0 || j > 31 || !(mask >> j & 1)) j = lane;
            wp.out[l] = wp.value[j];
        }
    }
    unsigned long long acc = 0;
    switch (op.kind) {
    case W_BALLOT: case W_ANY: case W_ALL: {
        unsigned bits = 0;
        for (unsigned l = 0; l < 32; ++l)
            if ((mask >> l & 1) && wp.value[l]) bits |= 1u << l;
        acc = op.kind == W_BALLOT ? bits : op.kind == W_ANY ? bits != 0 : bits == mask;
        for (unsigned l = 0; l < 32; ++l)  // only the mask's lanes: others may not have read their last result
            if (mask >> l & 1) wp.out[l] = acc;
        break;
    }
    case W_MATCH_ANY: case W_MATCH_ALL: {
        bool all = true;
        for (unsigned l = 0; l < 32; ++l) {
            if (!(mask >> l & 1)) continue;
            unsigned same = 0;
            for (unsigned k = 0; k < 32; ++k)
                if ((mask >> k & 1) && wp.value[k] == wp.value[l]) same |= 1u << k;
            wp.out[l] = same;
            all = all && same == mask;
        }
        if (op.kind == W_MATCH_ALL)
            for (unsigned l = 0; l < 32; ++l)
                if (mask >> l & 1) wp.out[l] = all ? (mask | (1ull << 32)) : 0;  // bit 32: the predicate
        break;
    }
    case W_ADD: case W_MIN: case W_MAX: case W_UMIN: case W_UMAX: case W_AND: case W_OR: case W_XORR: {
        bool first = true;
        for (unsigned l = 0; l < 32; ++l) {
            if (!(mask >> l & 1)) continue;
            unsigned v = unsigned(wp.value[l]);
            if (first) { acc = v; first = false; continue; }
            unsigned a = unsigned(acc);
            switch (op.kind) {
            case W_ADD: a += v; break;
            case W_MIN: a = unsigned(int(a) < int(v) ? int(a) : int(v)); break;
            case W_MAX: a = unsigned(int(a) > int(v) ? int(a) : int(v)); break;
            case W_UMIN: a = a < v ? a : v; break;
            case W_UMAX: a = a > v ? a : v; break;
            case W_AND: a &= v; break;
            case W_OR: a |= v; break;
            default: a ^= v; break;
            }
            acc = a;
        }
        for (unsigned l = 0; l < 32; ++l)
            if (mask >> l & 1) wp.out[l] = acc;
        break;
    }
    default: break;
    }
}

// Whether thread t, arriving at `op`, is the last lane of its mask to come. A lane of the mask
// parked at another function goes on to this one once that one completes (so t waits), unless
// that one waits for t too: then neither can go on, as on a GPU, where this hangs.
inline bool warp_meets(Worker& w, const Warp& wp, const WarpOp& op, unsigned t) {
    unsigned lane = t % 32, warp = t / 32, need = op.mask & lanes_of(w, warp);
    bool all = true;
    for (unsigned p = need & ~(1u << lane); p; p &= p - 1) {
        unsigned l = __builtin_ctz(p);
        if (w.f[warp * 32 + l].state == DONE)
            fail(CF_BLOCK_FMT ": thread %u (lane %u) reached %s (mask 0x%08x)%s, but lane %u of its warp exited "
                 "without reaching it; every lane in the mask must reach it", CF_BLOCK_ARGS, t, lane, WARP_NAMES[op.kind],
                 op.mask, at_line(op.file, op.line).text, l);
        if (!(wp.waiting >> l & 1)) {
            all = false;
            continue;
        }
        const WarpOp& other = wp.op[l];
        if (same_op(other, op)) continue;
        all = false;
        if (other.mask >> lane & 1)
            fail(CF_BLOCK_FMT ": thread %u (lane %u) called %s (mask 0x%08x, width %d)%s while lanes 0x%08x of its "
                 "warp wait at %s (mask 0x%08x, width %d)%s, each waiting for the other; the lanes of a mask must call "
                 "the same warp function together", CF_BLOCK_ARGS, t, lane, WARP_NAMES[op.kind], op.mask, op.width,
                 at_line(op.file, op.line).text, waiting_at(wp, other), WARP_NAMES[other.kind], other.mask, other.width,
                 at_line(other.file, other.line).text);
    }
    return all;
}

// A warp function of the calling lane: its result (`undefined`, where given: the lane a shuffle
// read whose value is undefined on a GPU, else -1). The runtime's bookkeeping (the warp's state,
// the fibers'), uninstrumented in a checked build as the barrier's is.
CF_RUNTIME inline unsigned long long warp_op(WarpKind kind, unsigned mask, unsigned long long value, int arg, int width,
                                  int* undefined = nullptr, const char* file = nullptr, unsigned line = 0) {
    Worker& w = worker();
    unsigned t = w.cur, lane = t % 32, warp = t / 32;
    if (!(mask >> lane & 1))
        fail(CF_BLOCK_FMT ": thread %u (lane %u) called %s with mask 0x%08x%s, which leaves its own lane out; the mask "
             "must include the calling lane", CF_BLOCK_ARGS, t, lane, WARP_NAMES[kind], mask, at_line(file, line).text);
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail(CF_BLOCK_FMT ": thread %u called %s with width %d%s; the width must be a power of 2 from 1 to 32",
             CF_BLOCK_ARGS, t, WARP_NAMES[kind], width, at_line(file, line).text);
    unsigned live = lanes_of(w, warp);
    unsigned need = mask & live;
    WarpOp mine{kind, mask, width, file, line};
    if (need == (1u << lane)) {  // only this lane: no one to wait for
        Warp solo;
        solo.value[lane] = value, solo.arg[lane] = arg, solo.undefined = 0;
        warp_compute(solo, mine, 1u << lane);
        if (undefined) *undefined = solo.undefined >> lane & 1 ? solo.src[lane] : -1;
        return solo.out[lane];
    }
    if (!w.fibers) {
        if (w.plain) plain_only(w, WARP_NAMES[kind]);
        enter_fibers(w);
    }
    Warp& wp = w.warps[warp];
    if (warp_meets(w, wp, mine, t)) {  // every other lane of the mask waits here: all go on
        wp.value[lane] = value, wp.arg[lane] = arg;
        warp_compute(wp, mine, live);
        if (kind == W_SYNC) CF_CHECK_SYNC(2, warp);
        wp.waiting &= ~need;
        for (unsigned p = need & ~(1u << lane); p; p &= p - 1) w.f[warp * 32 + __builtin_ctz(p)].state = READY;
        if (undefined) *undefined = wp.undefined >> lane & 1 ? wp.src[lane] : -1;
        return wp.out[lane];
    }
    wp.op[lane] = mine;
    wp.value[lane] = value, wp.arg[lane] = arg;
    wp.waiting |= 1u << lane;
    w.f[t].state = WAIT_WARP;
    park(w);
    if (undefined) *undefined = wp.undefined >> lane & 1 ? wp.src[lane] : -1;
    return wp.out[lane];
}

template <class T> inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp functions move values of up to 8 bytes");
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T> inline T from_bits(unsigned long long b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}

inline unsigned lane_id() { return worker().cur % 32; }

// __nanosleep: the block's other threads run meanwhile, so that a thread waiting in a loop for
// another of its block (a flag, a lock) sees it move, as on a GPU.
inline void yield_now() {
    Worker& w = worker();
    if (!w.L || w.n <= 1 || w.plain) return;  // (outside a launch, or no other thread to wait for)
    if (!w.fibers) enter_fibers(w);
    park(w);
}

// The lanes of the calling warp that reach here together: __activemask() and
// cooperative_groups::coalesced_threads() (`what`). A lane waits until no other lane of its warp
// can still come (each one is here too, parked at a barrier or a warp function, or done); the
// lanes here then form the group. On a GPU these are the lanes that happen to be converged: in
// convergent code the warp's live lanes, in a divergent branch the branch's, and a correct
// kernel works with any such group.
inline unsigned coalesced_lanes(const char* what) {
    Worker& w = worker();
    unsigned t = w.cur, lane = t % 32, warp = t / 32, me = 1u << lane, live = lanes_of(w, warp);
    if (live == me) return me;
    if (!w.fibers) {
        if (w.plain) plain_only(w, what);
        enter_fibers(w);
    }
    Warp& wp = w.warps[warp];
    wp.coalescing |= me;
    for (;;) {
        if (!(wp.coalescing & me)) return unsigned(wp.out[lane]);  // another lane formed the group
        bool more = false;
        for (unsigned p = live & ~wp.coalescing; p && !more; p &= p - 1) more = w.f[warp * 32 + __builtin_ctz(p)].state <= READY;
        if (!more) {
            unsigned group = wp.coalescing;
            for (unsigned p = group; p; p &= p - 1) wp.out[__builtin_ctz(p)] = group;
            wp.coalescing = 0;
            return group;
        }
        park(w);  // (still READY: the warp's other lanes run, then this one looks again)
    }
}

// ---------------------------------------------------------------- clusters
inline unsigned cluster_dim(int i) { return worker().L->cluster[i] > 0 ? unsigned(worker().L->cluster[i]) : 1; }
inline unsigned cluster_block_rank() {
    unsigned cx = cluster_dim(0), cy = cluster_dim(1), cz = cluster_dim(2);
    return blockIdx.x % cx + cx * (blockIdx.y % cy + cy * (blockIdx.z % cz));
}
template <class T> inline T* map_shared_rank(T* p, unsigned rank) {
    Worker& w = worker();
    char* other = cuforge_cpu_group_arena(rank);
    if (!other)
        fail(CF_BLOCK_FMT ", thread %u: map_shared_rank(.., %u) names no block of this cluster (a clustered launch has "
             "%u blocks per cluster)", CF_BLOCK_ARGS, w.cur, rank, cluster_dim(0) * cluster_dim(1) * cluster_dim(2));
    return reinterpret_cast<T*>(other + (reinterpret_cast<char*>(p) - w.shared));
}

// ---------------------------------------------------------------- shared memory
constexpr size_t STATIC_SHARED_LIMIT = 48 * 1024;  // a kernel's static __shared__ memory on a GPU
// static_shared_offset's answer for a declaration that does not fit: this, plus the bytes it would
// bring the kernel's total to (or, with SHARED_ARENA_FULL too, the library's arena's).
constexpr size_t SHARED_REFUSED = size_t(1) << 62, SHARED_ARENA_FULL = size_t(1) << 61;

// Where a __shared__ declaration lives in a block's arena: given once per declaration (a static
// local in the rewritten source), in the order the declarations are first reached. A kernel's
// total counts the declarations it reached first (a __device__ function's, reached first from
// another kernel, is that kernel's). This runs as the static local is initialised, which a jump
// out of (fail) would leave marked as under way, and the next thread to reach it would wait for
// forever: a declaration that does not fit is answered SHARED_REFUSED, which block_shared reports.
// A declaration of 16 bytes or more is placed at a multiple of 16 whatever its type's alignment: a
// GPU's compiler places a shared array so, and kernels read one of floats as float4 (an aligned
// vector access here as there).
inline size_t shared_alignment(size_t size, size_t align) { return size >= 16 && align < 16 ? 16 : align; }
inline size_t static_shared_offset(size_t size, size_t align) {
    align = shared_alignment(size, align);
    struct Total {
        ThreadFn kernel;
        size_t bytes;
        Total* next;
    };
    static std::mutex lock;
    static size_t next = 0;           // the arena's, shared by every kernel of this library
    static Total* totals = nullptr;   // each kernel's
    ThreadFn kernel = worker().thread_fn;
    std::lock_guard<std::mutex> hold(lock);
    Total* total = totals;
    while (total && total->kernel != kernel) total = total->next;
    if (!total) total = totals = new Total{kernel, 0, totals};
    if (total->bytes + size > STATIC_SHARED_LIMIT) return SHARED_REFUSED + total->bytes + size;
    size_t at = (next + align - 1) / align * align;
    if (at + size > STATIC_SHARED) return SHARED_REFUSED + SHARED_ARENA_FULL + at + size;
    next = at + size;
    total->bytes += size;
    return at;
}
[[noreturn]] __attribute__((cold, noinline)) inline void shared_refused(size_t at, size_t size, const char* name) {
    size_t total = at & (SHARED_ARENA_FULL - 1);
    if (at & SHARED_ARENA_FULL)
        fail("the static __shared__ memory of this source's kernels comes to %zu bytes with '%s' (%zu bytes), more than "
             "the CPU backend's %zu bytes for the kernels of one source; declare the kernels over separate sources, or "
             "use dynamic shared memory (an extern __shared__ array sized by shared_mem=)", total, name, size,
             STATIC_SHARED);
    fail("the kernel's static __shared__ memory comes to %zu bytes with '%s' (%zu bytes), more than the 48 KiB (%zu "
         "bytes) a kernel can have on a GPU; use dynamic shared memory (an extern __shared__ array sized by "
         "shared_mem=, up to 227 KiB per block with the opt-in)", total, name, size, STATIC_SHARED_LIMIT);
}
// A __shared__ declaration's memory in the running block's arena.
inline char* block_shared(size_t at, size_t size, const char* name) {
    if (__builtin_expect(at >= SHARED_REFUSED, 0)) shared_refused(at, size, name);
    return worker().shared + at;
}
inline void* dynamic_shared() { return worker().shared + STATIC_SHARED; }

// ---------------------------------------------------------------- the entry
template <class F> struct arity;
template <class... A> struct arity<void (*)(A...)> { static constexpr size_t value = sizeof...(A); };
// A parameter read from the launch's buffer by copy: the buffer keeps each parameter at its C
// offset, but the buffer itself is not aligned to 32 bytes, which a by-value double4_32a needs
// for the aligned vector load the compiler would use on a dereference.
// (The launch's buffer is cuforge's: not checked. The builtin, since a checked build's memcpy
// tells the checker of its bytes, and every thread of a launch with barriers copies its own.)
template <class T> CF_RUNTIME inline T param(const void* at) {
    if constexpr (std::is_trivially_copyable_v<T>) {
        alignas(T) unsigned char bytes[sizeof(T)];
        __builtin_memcpy(bytes, at, sizeof(T));
        return *__builtin_launder(reinterpret_cast<T*>(bytes));  // (std::launder: a call in a checked build)
    } else {
        return *static_cast<const T*>(at);
    }
}
template <auto K, class... A, size_t... I>
CF_RUNTIME inline void invoke_with(void (*)(A...), void** args, std::index_sequence<I...>) {
    K(param<std::remove_cv_t<std::remove_reference_t<A>>>(args[I])...);
}
// A C++ exception that leaves kernel code: thrown by a library's host path (libcu++'s
// cuda::std::optional::value() on an empty one, whose device path calls __trap()), since the
// source's own throw is refused. Unwinding cannot go past a thread's first frame, and
// std::terminate would end the process: the launch ends as __trap() ends it. (Raised after the
// handler, so that the exception is freed before fail() jumps away.)
[[noreturn]] inline void assert_failed(const char* fmt, ...);
template <class F> inline void guarded(F&& run) {
    char what[256];
    try {
        run();
        return;
#if defined(__GLIBCXX__)
    } catch (abi::__forced_unwind&) {  // (pthread_exit's unwinding: not ours to stop)
        throw;
#endif
    } catch (const std::exception& e) {
        snprintf(what, sizeof what, "%s", e.what());
    } catch (...) {
        snprintf(what, sizeof what, "not a std::exception");
    }
    assert_failed("a C++ exception (%s) left the kernel's code in " CF_BLOCK_FMT ", thread (%u, %u, %u); on a GPU, "
                  "the library's device code ends the launch with __trap() there", what, CF_BLOCK_ARGS, threadIdx.x,
                  threadIdx.y, threadIdx.z);
}

// One CUDA thread: the kernel called with its parameters unpacked from kernelParams' layout.
template <auto K> void call_kernel(void** args) {
    guarded([args] { invoke_with<K>(K, args, std::make_index_sequence<arity<decltype(K)>::value>{}); });
}
// The parameters copied out once (for the plain loop: locals the compiler knows no store reaches,
// so that it can keep them in registers and vectorize the loop over the threads). Not a
// std::tuple: in a checked build the runtime's loop is uninstrumented and std::get is not, and
// GCC inlines neither into the other, which made each thread a call per parameter.
template <size_t I, class T> struct ParamLeaf {
    T value;
};
template <class S, class... T> struct Params;
template <size_t... I, class... T> struct Params<std::index_sequence<I...>, T...> : ParamLeaf<I, T>... {};
template <size_t I, class T> CF_ANY_INLINE const T& param_at(const ParamLeaf<I, T>& leaf) { return leaf.value; }
template <class... A, size_t... I>
CF_RUNTIME inline Params<std::index_sequence<I...>, std::remove_cv_t<std::remove_reference_t<A>>...> unpack(void (*)(A...), void** args,
                                                                                               std::index_sequence<I...>) {
    return {{param<std::remove_cv_t<std::remove_reference_t<A>>>(args[I])}...};
}

CF_RUNTIME inline void begin_block(Worker& w, long long b) {
    long long gx = w.L->grid[0], gxy = gx * w.L->grid[1];  // (in 64 bits: a grid's x*y passes 2**32)
    CF_BLOCK_IDX.x = unsigned(b % gx);
    CF_BLOCK_IDX.y = unsigned(b % gxy / gx);
    CF_BLOCK_IDX.z = unsigned(b / gxy);
    w.fibers = false;
    w.block_done = false;
}

// K called with a launch's parameters (std::apply's own reads of them would be instrumented).
template <auto K, class P, size_t... I> CF_RUNTIME inline void apply_params(const P& p, std::index_sequence<I...>) {
    K(param_at<I>(p)...);
}

template <auto K, bool PLAIN> [[noreturn]] CF_RUNTIME void plain_loop(Worker& w) {
    void** args = w.L->args;
    const auto params = unpack(K, args, std::make_index_sequence<arity<decltype(K)>::value>{});
    const std::make_index_sequence<arity<decltype(K)>::value> each{};
    unsigned bx = blockDim.x, by = blockDim.y, bz = blockDim.z;
    // The block and thread that run are stored as they change (volatile), for a fault's report:
    // the compiler would otherwise keep them in registers (the thread only where it is not a
    // vectorized loop: a PLAIN fault names the block).
    volatile long long& at = w.b;
    for (long long b = at; b < w.last; at = ++b) {
        begin_block(w, b);
        unsigned t = 0;
        for (unsigned z = 0; z < bz; ++z) {
            CF_THREAD_IDX.z = z;
            for (unsigned y = 0; y < by; ++y) {
                CF_THREAD_IDX.y = y;
                if (PLAIN) {  // no barrier or warp function in the source: a loop the compiler may vectorize
                    for (unsigned x = 0; x < bx; ++x) {
                        CF_THREAD_IDX.x = x;
                        apply_params<K>(params, each);
                    }
                    continue;
                }
                for (unsigned x = 0; x < bx; ++x, ++t) {
                    CF_THREAD_IDX.x = x;
                    static_cast<volatile unsigned&>(w.cur) = t;
                    apply_params<K>(params, each);
                    if (__builtin_expect(w.fibers, 0)) exit_thread(w);  // the block went on fibers
                }
            }
        }
    }
    w.block_done = false;
    cuforge_cpu_switch(&w.f[MAX_THREADS].sp, w.runner);
    __builtin_unreachable();
}
template <auto K, bool PLAIN> void plain_main(void* worker, unsigned) {
    guarded([worker] { plain_loop<K, PLAIN>(*static_cast<Worker*>(worker)); });
    __builtin_unreachable();
}

inline bool prepare(Worker& w, cuforge_cpu_launch* L, ThreadFn tf, bool plain) {
    if (!w.f) w.f = new Fiber[MAX_THREADS + 1];
    w.stacks = cuforge_cpu_stacks(plain ? 0 : L->block[0] * L->block[1] * L->block[2]) + CUFORGE_CPU_HEADER;
    w.shared = cuforge_cpu_arena(STATIC_SHARED + L->shared_mem);
    if (!w.stacks || !w.shared) return false;
    w.L = L;
    w.thread_fn = tf;
    w.plain = plain;
    w.block_dim = uint3{L->block[0], L->block[1], L->block[2]};
    w.grid_dim = uint3{L->grid[0], L->grid[1], L->grid[2]};
#ifdef CUFORGE_CPU_PLAIN
    plain_block_dim = w.block_dim, plain_grid_dim = w.grid_dim;  // (this thread's: the plain loop runs on it)
#endif
    w.n = L->block[0] * L->block[1] * L->block[2];
    return true;
}

// Whether `address` is on the guard page below one of the worker's fiber stacks: a thread's frames
// outgrew its stack (the stack probes of -fstack-clash-protection touch every page they grow into).
inline bool on_guard_page(const Worker& w, const void* address) {
    uintptr_t at = uintptr_t(address) - uintptr_t(w.stacks);  // (below the stacks: wraps to a large value)
    return at < (MAX_THREADS + 1ull) * STRIDE && at % STRIDE < CUFORGE_CPU_GUARD;
}

inline void stack_overflow(cuforge_cpu_launch* L, const char* where) {
    snprintf(L->message, sizeof L->message, "a stack overflow in %s: its local variables need more stack than the CPU "
             "backend gives a thread (at least %zu KiB); on a GPU a thread's stack is 1 KiB by default "
             "(cudaLimitStackSize), so make its local arrays smaller, or put them in shared or global memory (a "
             "__shared__ array per block, an array argument)", where, STACK / 1024);
}

// Run blocks [first, last) of a launch on this thread. A fault, a failed assert or threads that
// can never meet end the range early with L->status set.
// Where a fault happened: the block the worker runs, and the thread where it is known.
inline void fault_place(char* out, size_t size, Worker& w, bool thread_known) {
    long long b = static_cast<volatile long long&>(w.b);
    unsigned gx = w.L->grid[0], gy = w.L->grid[1], bx = w.L->block[0], by = w.L->block[1];
    int used = snprintf(out, size, "block (%u, %u, %u)", unsigned(b % gx), unsigned(b / gx % gy),
                        unsigned(b / ((long long)gx * gy)));
    unsigned t = static_cast<volatile unsigned&>(w.cur);
    if (thread_known && used > 0 && size_t(used) < size)
        snprintf(out + used, size - used, ", thread (%u, %u, %u)", t % bx, t / bx % by, t / (bx * by));
}
// The ranges of blocks this thread has run (of this library's kernels): state a thread keeps for
// its block (cuda_pipeline_primitives.h's copies) is the current block's only where it was made in
// the current range (a launch's struct may have the last launch's address).
inline thread_local unsigned long long ranges_run = 0;
template <auto K, bool PLAIN> void run_range(cuforge_cpu_launch* L, long long first, long long last) {
    ++ranges_run;
    char* region = cuforge_cpu_stacks(0);  // (this runs on the thread's own stack: the region is asked for)
    if (!region) {
        if (__sync_bool_compare_and_swap(&L->status, 0, 1))
            snprintf(L->message, sizeof L->message, "out of memory for the fibers' stacks");
        return;
    }
    Worker& w = *reinterpret_cast<Worker*>(region);
    if (!prepare(w, L, &call_kernel<K>, PLAIN)) {
        if (__sync_bool_compare_and_swap(&L->status, 0, 1))
            snprintf(L->message, sizeof L->message, "out of memory for the fibers' stacks or shared memory");
        return;
    }
    volatile int sig = 0;
    void* volatile addr = nullptr;
    if (sigsetjmp(w.jump, 0)) {  // fail() or a fault came back here
        cuforge_cpu_guard(nullptr, nullptr, nullptr);
        if (!sig || !__sync_bool_compare_and_swap(&L->status, 0, FAULTED)) return;
        char where[96];
        bool overflow = sig == SIGSEGV && on_guard_page(w, addr);
        fault_place(where, sizeof where, w, !PLAIN || w.fibers);
#ifdef CUFORGE_CPU_PLAIN
        if (overflow && !w.fibers) {  // (a frame that deep is no vectorized loop: the thread-local is the thread's)
            size_t used = strlen(where);
            snprintf(where + used, sizeof where - used, ", thread (%u, %u, %u)", plain_thread_idx.x, plain_thread_idx.y,
                     plain_thread_idx.z);
        }
#endif
        if (overflow)
            stack_overflow(L, where);
        else if (sig == -SIGSEGV)  // (a general-protection fault: runtime.cpp's on_fault)
            snprintf(L->message, sizeof L->message, "a general-protection fault in %s, for which the processor names no "
                     "address; on x86-64 it is most often a 16-byte vector type (float4, int4, double2, ...) read or "
                     "written at an address that is not a multiple of 16, which on a GPU is a misaligned address error: "
                     "check the offsets of pointers cast to vector types (else a pointer that is no valid address at "
                     "all)", where);
        else  // (x86 faults alike on a division by zero and on INT_MIN / -1, the one quotient that overflows)
            snprintf(L->message, sizeof L->message, "%s at address %p in %s",
                     sig == SIGSEGV ? "a segmentation fault (an access to memory the process does not own)"
                     : sig == SIGBUS ? "a bus error (a misaligned or unmapped access)"
                     : "an arithmetic fault (an integer division by zero or overflow (INT_MIN / -1), which on a GPU "
                       "gives an undefined value)",
                     (void*)addr, where);
        return;
    }
    cuforge_cpu_guard(&w.jump, &sig, &addr);
    w.b = first, w.last = last;
    while (w.b < w.last && !L->status) {
        w.f[MAX_THREADS].sp = fiber_stack(w.stacks + size_t(MAX_THREADS) * STRIDE, STRIDE, plain_main<K, PLAIN>, &w, 0);
        cuforge_cpu_switch(&w.runner, w.f[MAX_THREADS].sp);
        if (w.block_done) ++w.b;  // a block on fibers finished: the plain loop goes on after it
    }
    cuforge_cpu_guard(nullptr, nullptr, nullptr);
}

[[noreturn]] inline void assert_failed(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(ASSERTED, fmt, ap);
}
[[noreturn]] inline void assert_fail(const char* expr, const char* file, unsigned line) {
    assert_failed("assert(%s) failed at %s, line %u, in " CF_BLOCK_FMT ", thread (%u, %u, %u)", expr, file, line,
                  CF_BLOCK_ARGS, threadIdx.x, threadIdx.y, threadIdx.z);
}
// __trap() and __brkpt(): the launch ends with an error, as on a GPU without a debugger.
[[noreturn]] inline void trap(const char* what, const char* file, unsigned line) {
    assert_failed("%s called at %s, line %u, in " CF_BLOCK_FMT ", thread (%u, %u, %u)", what, file, line,
                  CF_BLOCK_ARGS, threadIdx.x, threadIdx.y, threadIdx.z);
}

}  // namespace cuforge_cpu

// ---------------------------------------------------------------- the CUDA names
// (the caller's file and line as default arguments: a macro would break CUDA's own declarations)
[[noreturn]] inline void __trap(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    cuforge_cpu::trap("__trap()", file, line);
}
[[noreturn]] inline void __brkpt(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    cuforge_cpu::trap("__brkpt()", file, line);
}
// What CUDA's assert calls in device code (NVRTC accepts a call to it as written).
extern "C" [[noreturn]] inline void __assertfail(const char* message, const char* file, unsigned line, const char*, size_t) {
    cuforge_cpu::assert_fail(message, file, line);
}
inline void __syncthreads(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
    cuforge_cpu::barrier(1, cuforge_cpu::B_PLAIN, file, line);
}
inline int __syncthreads_count(int p) { return cuforge_cpu::barrier(p, cuforge_cpu::B_COUNT); }
inline int __syncthreads_and(int p) { return cuforge_cpu::barrier(p, cuforge_cpu::B_AND); }
inline int __syncthreads_or(int p) { return cuforge_cpu::barrier(p, cuforge_cpu::B_OR); }
// CUDA's address-space predicates: the block's shared memory (its arena), the thread's own (its
// stack and the worker's region), global memory (the rest); no constant bank here. (The runtime's
// own memory they read is not the kernel's: uninstrumented.)
CF_RUNTIME inline unsigned int __isShared(const void* p) {
    const cuforge_cpu::Worker& w = cuforge_cpu::worker();
    const char* c = static_cast<const char*>(p);
    return w.L && w.shared && c >= w.shared && c < w.shared + cuforge_cpu::STATIC_SHARED + w.L->shared_mem;
}
CF_RUNTIME inline unsigned int __isLocal(const void* p) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p), region = reinterpret_cast<uintptr_t>(&cuforge_cpu::worker());
    return a - region < CUFORGE_CPU_REGION && !__isShared(p);
}
CF_RUNTIME inline unsigned int __isGlobal(const void* p) { return !__isShared(p) && !__isLocal(p); }
inline unsigned int __isConstant(const void*) { return 0; }
// Each warp function says where it is called (a report of a lane that never reaches it names the line).
#define CF_AT const char *cf_file = __builtin_FILE(), unsigned cf_line = __builtin_LINE()
#define CF_WHERE nullptr, cf_file, cf_line
inline void __syncwarp(unsigned mask = 0xffffffffu, CF_AT) {
    cuforge_cpu::warp_op(cuforge_cpu::W_SYNC, mask, 0, 0, 32, CF_WHERE);
}
inline unsigned __activemask() { return cuforge_cpu::coalesced_lanes("__activemask"); }
inline unsigned __lanemask_lt() { return (1u << cuforge_cpu::lane_id()) - 1; }
inline unsigned __ballot_sync(unsigned mask, int p, CF_AT) {
    return unsigned(cuforge_cpu::warp_op(cuforge_cpu::W_BALLOT, mask, p != 0, 0, 32, CF_WHERE));
}
inline int __any_sync(unsigned mask, int p, CF_AT) {
    return int(cuforge_cpu::warp_op(cuforge_cpu::W_ANY, mask, p != 0, 0, 32, CF_WHERE));
}
inline int __all_sync(unsigned mask, int p, CF_AT) {
    return int(cuforge_cpu::warp_op(cuforge_cpu::W_ALL, mask, p != 0, 0, 32, CF_WHERE));
}
// A checked build's shuffles say where they are called: a value read from a lane outside the mask
// (undefined on a GPU) is returned as a marked NaN, for floating-point values, and a launch whose
// outputs hold one reports the shuffle (cuforge/cpu_check.h).
#ifdef CUFORGE_CPU_CHECK
namespace cuforge_cpu {
template <class T> T shuffled(unsigned long long bits, int undefined, const char* name, const char* file, unsigned line);
}
#define CF_SHFL(KIND, NAME, A)                                                                                     \
    int undefined;                                                                                                 \
    unsigned long long bits = cuforge_cpu::warp_op(cuforge_cpu::KIND, mask, cuforge_cpu::to_bits(v), A, width, &undefined, \
                                                   cf_file, cf_line);                                                 \
    return cuforge_cpu::shuffled<T>(bits, undefined, NAME, cf_file, cf_line)
#else
#define CF_SHFL(KIND, NAME, A) \
    return cuforge_cpu::from_bits<T>(cuforge_cpu::warp_op(cuforge_cpu::KIND, mask, cuforge_cpu::to_bits(v), A, width, CF_WHERE))
#endif
template <class T> inline T __shfl_sync(unsigned mask, T v, int lane, int width = warpSize, CF_AT) {
    CF_SHFL(W_IDX, "__shfl_sync", lane);
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize, CF_AT) {
    CF_SHFL(W_UP, "__shfl_up_sync", int(delta));
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize, CF_AT) {
    CF_SHFL(W_DOWN, "__shfl_down_sync", int(delta));
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize, CF_AT) {
    CF_SHFL(W_XOR, "__shfl_xor_sync", lane_mask);
}
template <class T> inline unsigned __match_any_sync(unsigned mask, T v, CF_AT) {
    return unsigned(cuforge_cpu::warp_op(cuforge_cpu::W_MATCH_ANY, mask, cuforge_cpu::to_bits(v), 0, 32, CF_WHERE));
}
template <class T> inline unsigned __match_all_sync(unsigned mask, T v, int* pred, CF_AT) {
    unsigned long long r = cuforge_cpu::warp_op(cuforge_cpu::W_MATCH_ALL, mask, cuforge_cpu::to_bits(v), 0, 32, CF_WHERE);
    *pred = int(r >> 32);
    return unsigned(r);
}
#define CF_REDUCE(name, kind, T) \
    inline T name(unsigned mask, T v, CF_AT) { return T(cuforge_cpu::warp_op(cuforge_cpu::kind, mask, (unsigned)v, 0, 32, CF_WHERE)); }
CF_REDUCE(__reduce_add_sync, W_ADD, unsigned)
CF_REDUCE(__reduce_add_sync, W_ADD, int)
CF_REDUCE(__reduce_min_sync, W_UMIN, unsigned)
CF_REDUCE(__reduce_min_sync, W_MIN, int)
CF_REDUCE(__reduce_max_sync, W_UMAX, unsigned)
CF_REDUCE(__reduce_max_sync, W_MAX, int)
CF_REDUCE(__reduce_and_sync, W_AND, unsigned)
CF_REDUCE(__reduce_or_sync, W_OR, unsigned)
CF_REDUCE(__reduce_xor_sync, W_XORR, unsigned)
#undef CF_REDUCE

// assert is cuforge's from here on, also after the source includes <cassert> or <assert.h>
// (which would make it the C library's, whose abort() ends the process): cuforge's shims of
// those headers include the real ones and then this.
#define CUFORGE_CPU_ASSERT 1
#include "cuforge/cpu_assert.h"

#include "cuforge/cpu_math.h"

// printf from kernel code goes through the runtime, so that a launch stopped meanwhile (Ctrl-C,
// the time limit) ends just after the call rather than inside it, where stdout's lock is held.
namespace cuforge_cpu {
inline int device_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline int device_printf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
#ifdef CUFORGE_CPU_CHECK
    int n = cuforge_check_prints() ? cuforge_cpu_vprintf(fmt, ap) : vsnprintf(nullptr, 0, fmt, ap);
#else
    int n = cuforge_cpu_vprintf(fmt, ap);
#endif
    va_end(ap);
    return n;
}
}  // namespace cuforge_cpu
#define printf(...) ::cuforge_cpu::device_printf(__VA_ARGS__)
// __CUDA_ARCH__ is the GPU the CPU backend stands for (sm_90, whose limits a CPU launch keeps),
// so that code under `#if __CUDA_ARCH__ >= 700` is the code that runs; CUFORGE_CPU tells a CPU
// build apart. CCCL's configuration is read first, without it: CCCL takes __CUDA_ARCH__ to mean
// device code (PTX), and on the CPU it must stay in its host mode.
// A checked build checks libcu++'s own preconditions too (an index past a cuda::std::array or a
// span, a barrier's count), each a failed assert of the kernel's: a DeviceFaultError, never the
// C library's __assert_fail, which ends the process.
#if defined(CUFORGE_CPU_CHECK) && !defined(CCCL_ENABLE_HOST_ASSERTIONS)
#define CCCL_ENABLE_HOST_ASSERTIONS
#endif
#if __has_include(<cuda/__cccl_config>)
#include <cuda/__cccl_config>
#ifdef CUFORGE_CPU_CHECK
#undef _CCCL_ASSERT_IMPL_HOST
#define _CCCL_ASSERT_IMPL_HOST(expression, message) \
    (static_cast<bool>(expression) ? (void)0 : ::cuforge_cpu::assert_fail(message, __FILE__, __LINE__))
#endif
#endif
#define __CUDA_ARCH__ 900
