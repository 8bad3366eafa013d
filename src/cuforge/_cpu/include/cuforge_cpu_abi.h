// The C interface between a kernel library, cuforge's CPU runtime library and Python (ctypes).
#pragma once
#include <csetjmp>
#include <cstdarg>

// The runtime library is built with hidden visibility and exports only these functions: it is
// loaded with its symbols global, and must not lend its C++ internals to libraries loaded later.
#define CUFORGE_CPU_API __attribute__((visibility("default")))

extern "C" {
// The launch as the runtime, the entry and Python (ctypes) see it: one C struct.
struct cuforge_cpu_launch {
    unsigned grid[3], block[3];
    unsigned long long shared_mem;  // dynamic shared memory per block, in bytes
    void** args;                    // a pointer to each parameter, as cuLaunchKernel's kernelParams
    int cooperative;                // the blocks of a group alive at once: the grid (grid.sync()), or each cluster
    int cluster[3];                 // a clustered launch's cluster dims, else 0
    volatile int status;            // 0 ok; the first error sets it (see cuforge_cpu::fail)
    char message[2048];
};
// From cuforge's runtime library (loaded before any kernel): a fault in kernel code (SIGSEGV,
// SIGBUS, SIGFPE) jumps back to the frame that set `guard` on this thread.
CUFORGE_CPU_API void cuforge_cpu_guard(sigjmp_buf* jump, volatile int* signal, void* volatile* address);
// This worker thread's memory, shared by every kernel library: its region (see below: the
// header, then MAX_THREADS + 1 fiber stacks STACK_STRIDE bytes apart, the last the plain loop's;
// the first `fibers` and the last with a guard page), and a shared-memory arena of at least `bytes`.
CUFORGE_CPU_API char* cuforge_cpu_stacks(unsigned fibers);
CUFORGE_CPU_API char* cuforge_cpu_arena(unsigned long long bytes);
}

extern "C" {
typedef void (*cuforge_cpu_entry)(struct cuforge_cpu_launch*, long long first, long long last);
// Run every block of a launch (on the pool's workers and the calling thread) and return when all
// are done or one failed (L->status).
CUFORGE_CPU_API void cuforge_cpu_run(cuforge_cpu_entry entry, struct cuforge_cpu_launch* L);
// The pool's size (worker threads, the caller included); 0 asks for one per core.
CUFORGE_CPU_API int cuforge_cpu_threads(int wanted);
// Cooperative launches and clusters run the blocks of a group (the grid; a cluster) at once, each
// on a thread of its own. The last thread of a block to reach grid.sync()/cluster.sync() waits
// here for the group's other blocks: 0 when all came, else the message of why they cannot.
CUFORGE_CPU_API int cuforge_cpu_group_sync(struct cuforge_cpu_launch* L, char* why, unsigned long long size);
// The shared-memory arena of block `rank` of this block's cluster (map_shared_rank), or null.
CUFORGE_CPU_API char* cuforge_cpu_group_arena(unsigned rank);
// The size of the module variable at `address` (from the library's symbol table), 0 if unknown.
CUFORGE_CPU_API unsigned long long cuforge_cpu_symbol_size(void* address);
// This block's thread is done with its blocks (a group's block that exits stops the others' waits).
CUFORGE_CPU_API void cuforge_cpu_group_exit(void);
// The time limit of a launch from now on, in seconds (0: none): one that runs longer is stopped
// with status CUFORGE_CPU_TIMED_OUT.
CUFORGE_CPU_API void cuforge_cpu_set_timeout(double seconds);
// printf for kernel code: a launch stopped while it prints ends when the call returns.
CUFORGE_CPU_API int cuforge_cpu_vprintf(const char* format, va_list args);
}

// Statuses the runtime sets (kernel code sets the others, from 1 up): the launch was stopped
// from outside, its threads sent back through the fault guard wherever their code was.
#define CUFORGE_CPU_INTERRUPTED 64  // by SIGINT (Ctrl-C)
#define CUFORGE_CPU_TIMED_OUT 65    // by the time limit

// A fiber's stack: a guard page at its bottom, then at least STACK bytes for the CUDA thread, and
// STAGGER bytes more, by which each fiber's top is moved down a different number of cache lines.
extern "C" {
// A checked kernel library's __shared__ declarations as its code reaches them: written by the
// kernel side (cuforge/cpu_check.h), read by the checker (_cpu/check.cpp).
struct cuforge_check_shared {
    unsigned count;
    struct {
        unsigned long long at, bytes, elem;
        const char* name;
    } var[64];
    unsigned long long next;
    const char* dynamic_name;
    unsigned long long dynamic_elem;
};
}

// A checked launch's shuffle that read an undefined lane returns, for a float or a double, a
// quiet NaN marked as such: the checker looks for the mark in what the kernel wrote (a NaN's
// payload goes through arithmetic). A float's mark holds the shuffle's site (below 63) plus 1 in
// the six bits below its quiet bit, which a conversion to __half or __nv_bfloat16 keeps, and
// 0xD5A9 in its low 16 bits; a double's is the float's widened, as a conversion makes it.
#define CUFORGE_CHECK_UNDEFINED_F32(site) (0x7FC0D5A9u | (unsigned(site) + 1u) << 16)
#define CUFORGE_CHECK_UNDEFINED_F64(site) \
    (0x7FF0000000000000ull | (unsigned long long)(CUFORGE_CHECK_UNDEFINED_F32(site) & 0x7FFFFFu) << 29)
#define CUFORGE_CHECK_UNDEFINED_SITES 63

#define CUFORGE_CPU_STACK (128 * 1024)
#define CUFORGE_CPU_STAGGER (64 * 1024)
#define CUFORGE_CPU_GUARD 4096
#define CUFORGE_CPU_STACK_STRIDE (CUFORGE_CPU_GUARD + CUFORGE_CPU_STACK + CUFORGE_CPU_STAGGER)
#define CUFORGE_CPU_MAX_THREADS 1024
// A block's arena: static __shared__ memory (of every kernel of one library) first, then dynamic.
#define CUFORGE_CPU_STATIC_SHARED (256ull * 1024)
// A worker's arena is this much larger than a block asks for: a checked launch's index past the
// end of dynamic shared memory lands in bytes the checker knows are the arena's.
#define CUFORGE_CPU_ARENA_SLACK 8192
// A worker thread's region: aligned to its size, a header (the worker's state) then its
// MAX_THREADS + 1 fiber stacks, so that code on any of them finds the header from its stack pointer.
#define CUFORGE_CPU_REGION (1ull << 28)
#define CUFORGE_CPU_HEADER (64 * 1024)
