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
    uint16_t bar0 = 0;  // the block's barrier generation (*bar_gen, as cells keep it) at its start
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

// Global memory's shadow is in two levels: a word per element (4 bytes), and a full cell (24) that
// only an element some access needed it for takes up. An element touched by one thread only, before
// its block's first barrier, __syncwarp, __threadfence() or grid.sync() (all its generations and counts
// still 0, its barrier generation the block's first), is its word alone: the thread (launch-wide
// serial, plus 1) and which of INIT, W_SET, R_SET the full cell's flags would hold; a full cell of
// these is what the word's fields make, with the block's first barrier generation and zeros
// (`expand`). A word of 0: no access yet in this run of the launch (check.cpp clears the words
// before each); of EXPANDED: the full cell holds the element's state. A saxpy's element is touched
// by one thread, once: the word is all its shadow, a sixth of the cell's bytes, which memory's
// bandwidth and the cache decide on a CPU of few cores.
using Word = uint32_t;
enum : uint32_t { W_INIT = 1, W_WRITTEN = 2, W_READ = 4, WHO_LIMIT = (1u << 29) - 1, EXPANDED = ~0u };

// Whether thread t's accesses now are ones a word holds: no barrier, __syncwarp, fence or grid.sync
// yet in its block (and a serial a word holds: below WHO_LIMIT, so that no word is EXPANDED's bits).
__attribute__((always_inline)) inline bool word_holds(const View* c, unsigned t) {
    return !(uint16_t(uint16_t(*c->bar_gen) ^ c->bar0) | c->warp_gen[t / 32] | c->fences | c->grid_syncs) && c->who0 + t < WHO_LIMIT;
}

// no_other_thread, on a word where it holds the element's state, for an access of thread `who` (one
// whose accesses a word holds). true: done; false: the full cell decides (expand).
__attribute__((always_inline)) inline bool word_update(Word& word, uint32_t who, bool init, bool write) {
    uint32_t w = word, f = w & 7;
    if (w == EXPANDED || (w && (w >> 3) != who)) return false;
    if (!write && !(init || (f & W_INIT))) return false;  // (read before any write: the rules report it)
    word = who << 3 | (write ? W_INIT | W_WRITTEN : f | W_READ);  // (a write forgets the reads before it)
    return true;
}
__attribute__((always_inline)) inline bool word_common(const View* c, Word& word, bool init, bool write) {
    unsigned t = *c->cur;
    return word_holds(c, t) && word_update(word, c->who0 + t, init, write);
}

// The element's full cell, where its word leaves it: the word's state written into it (or a fresh
// cell's, of launch `gen`), the word then EXPANDED. `bar0`: the running block's View::bar0, the
// barrier generation of a thread of its own the word names (another block's is compared with
// nothing: see check.cpp's ordered). (Two workers expanding one word at once: a race between
// blocks, both writing the same cell.)
__attribute__((always_inline)) inline Cell& expand(Word& word, Cell& cell, uint32_t gen, uint16_t bar0) {
    uint32_t w = word, f = w & 7, who = w >> 3;
    if (w == EXPANDED) return cell;
    cell = Cell{gen, (f & W_WRITTEN) ? who : 0, (f & W_READ) ? who : 0, bar0, bar0, 0, 0, 0, 0, 0,
                uint8_t(((f & W_INIT) ? INIT : 0) | ((f & W_WRITTEN) ? W_SET : 0) | ((f & W_READ) ? R_SET : 0))};
    __atomic_store_n(&word, EXPANDED, __ATOMIC_RELEASE);
    return cell;
}

// The element's state, looked at (not changed): its cell, or the one its word would expand to.
inline Cell peek(const Word& word, const Cell& cell, uint32_t gen, uint16_t bar0) {
    Word copy = word;
    Cell fresh = cell;
    return copy == EXPANDED ? cell : expand(copy, fresh, gen, bar0);
}

}  // namespace cuforge_check

extern "C" {
// An array parameter of the running checked launch, as an indexed kernel's inline checks see it
// (check.cpp fills them before its blocks run): its cells, the bytes of one, and the words of its
// shadow where the kernel writes it (null: an In argument, checked for bounds only).
struct cuforge_check_param {
    uintptr_t count;   // its cells: an index below it is in bounds (the kernel's pointer is the copy's first byte)
    unsigned granule;  // bytes per cell; 0: none taken inline
    cuforge_check::Word* words;
    bool init;         // its elements start initialised (not an Out argument's)
};
enum { CUFORGE_CHECK_PARAMS = 64 };
// (each worker's state by the region of its stack: cuforge_cpu_abi.h's CUFORGE_CPU_REGION)
extern CUFORGE_CPU_API cuforge_check::View* cuforge_check_by_region[std::size_t(1) << (47 - __builtin_ctzll(CUFORGE_CPU_REGION))];
extern CUFORGE_CPU_API cuforge_check_param cuforge_check_params[CUFORGE_CHECK_PARAMS];
}
