// cuforge/check_cell.h: the shadow of an element and the checker's common case, shared by the
// checker (cuforge/_cpu/check.cpp) and the inline checks of an indexed kernel's build
// (cuforge/cpu_check.h, cuforge/_cpu/indexed.py), so that both decide an access the same way.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuforge_cpu_abi.h"

namespace cuforge_check {

// R_ATOMIC: the reader's fields hold the last atomic writer (R_CAS: by a compare-and-swap), and
// the writer's the last plain write, which atomics leave in place. W_VOLATILE: that write was volatile.
// R_VOLATILE: the last reader's read was volatile (a poll, which atomics do not race with).
enum Flags : uint8_t { INIT = 1, W_SET = 2, W_VOLATILE = 4, R_SET = 8, R_MANY = 16, R_ATOMIC = 32, R_CAS = 64, R_VOLATILE = 128 };

// One element's shadow.
struct Cell {
    uint32_t gen;         // the block serial (shared memory) or launch serial (the rest) it belongs to
    uint32_t w, r;        // the last writer and reader: thread (shared) or launch-wide thread serial, plus 1
    uint16_t w_bar, r_bar;  // their block's barrier generation then
    uint16_t w_warp, r_warp;  // their warp's __syncwarp generation then (a loop of 256 syncs must not come round to it)
    uint8_t w_fence, w_grid, r_grid;  // the writer block's fence count, the grid.sync count (cooperative)
    uint8_t flags;
};
static_assert(sizeof(Cell) == 24, "a shadow cell is 24 bytes");

// What the common case reads of a worker's state (the head of check.cpp's Current).
struct View {
    unsigned serial = 0;      // the launch it belongs to
    unsigned held = 0;        // a write held (check.cpp's Current::waw): the launch's serial, else 0
    const volatile unsigned* cur = nullptr;  // the worker's running thread (its w.cur)
    const unsigned* bar_gen = nullptr;
    uint32_t gen = 0;   // block serial on this worker
    uint32_t who0 = 1;  // the block's first thread's launch-wide serial, plus 1
    uint8_t fences = 0, grid_syncs = 0;  // the block's __threadfence()s and grid.sync()s
    uint16_t warp_gen[CUFORGE_CPU_MAX_THREADS / 32] = {};
    uint8_t thread_fences[CUFORGE_CPU_MAX_THREADS] = {};
};

// The common cases, decided without the rules: one element that no other thread has touched so
// far in this launch (or block, for shared memory), no other reader pending, read where it is
// initialised (`init`: the region's elements start so) or written; or one more reader of shared
// memory that many read. The rules (check.cpp) decide them the same way, and take what this
// leaves, which it leaves as it found it (but for a cell of an earlier launch or block, cleared).
// true: done.
__attribute__((always_inline)) inline bool no_other_thread(const View* c, Cell& cell, bool shared, bool init, bool write) {
    unsigned t = *c->cur;
    uint32_t who = shared ? t + 1 : c->who0 + t;
    uint32_t gen = shared ? c->gen : c->serial;
    if (cell.gen != gen) cell = Cell{gen, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  // another block's, or launch's: untouched
    uint8_t f = cell.flags;
    if (!write && shared && (f & R_MANY) && cell.r != who) {
        // Shared memory that many threads read in this barrier interval already (a tile's row):
        // one more read changes nothing, where the rules find the last writer ordered before it
        // (a barrier between) and the last reader not (none between, nor a __syncwarp in its warp).
        uint16_t bar = uint16_t(*c->bar_gen);
        bool writer_before = !(f & W_SET) || cell.w == who || cell.w_bar != bar;
        bool reader_beside = cell.r_bar == bar && ((cell.r - 1) / 32 != t / 32 || cell.r_warp == c->warp_gen[t / 32]);
        return writer_before && reader_beside && (f & INIT);
    }
    if ((f & R_MANY) || ((f & W_SET) ? cell.w != who : cell.w != 0)) return false;  // (no W_SET: another block's atomic kept)
    if (write) {
        if ((f & R_SET) && cell.r != who) return false;
        cell.w = who, cell.w_bar = uint16_t(*c->bar_gen), cell.w_warp = c->warp_gen[t / 32];
        cell.w_grid = shared ? 0 : c->grid_syncs;
        cell.w_fence = shared ? c->thread_fences[t] : c->fences;
        cell.flags = uint8_t(INIT | W_SET);
        return true;
    }
    if (((f & R_SET) && cell.r != who) || !(init || (f & INIT))) return false;
    cell.r = who, cell.r_bar = uint16_t(*c->bar_gen), cell.r_warp = c->warp_gen[t / 32];
    if (!(f & R_SET)) cell.r_grid = shared ? 0 : c->grid_syncs;
    cell.flags = uint8_t((f | R_SET) & ~(R_ATOMIC | R_CAS | R_VOLATILE));  // (its own atomic before: now a plain reader)
    return true;
}

}  // namespace cuforge_check

extern "C" {
// An array parameter of the running checked launch, as an indexed kernel's inline checks see it
// (check.cpp fills them before its blocks run): the region of its copy, the bytes of a cell, and
// the cells where the kernel writes it (null: an In argument, checked for bounds only).
struct cuforge_check_param {
    uintptr_t base;   // the region's first byte
    uintptr_t last;   // the offset of its last cell (bytes less a cell), or UINTPTR_MAX: none taken inline
    unsigned granule;  // bytes per cell; 0: none taken inline
    unsigned shift;    // log 2 of them
    cuforge_check::Cell* cells;
    bool init;         // its elements start initialised (not an Out argument's)
};
enum { CUFORGE_CHECK_PARAMS = 64 };
// (each worker's state by the region of its stack: cuforge_cpu_abi.h's CUFORGE_CPU_REGION)
extern CUFORGE_CPU_API cuforge_check::View* cuforge_check_by_region[std::size_t(1) << (47 - __builtin_ctzll(CUFORGE_CPU_REGION))];
extern CUFORGE_CPU_API cuforge_check_param cuforge_check_params[CUFORGE_CHECK_PARAMS];
}
