// cuforge's kernel checker: what a checked launch on the CPU backend runs its kernel under
// (check=True, CUFORGE_CHECK=1). Built once per compiler as a library of its own
// (cuforge/_cpu/check.py) and loaded RTLD_GLOBAL before any checked kernel library.
//
// A checked kernel library is compiled with the compiler's ThreadSanitizer instrumentation and
// without its runtime (cuforge/_cpu/check.py): the compiler puts a call to __tsan_read4,
// __tsan_write8, __tsan_atomic32_fetch_add, ... before each memory access of the kernel's code,
// and those calls land here. Each is an observer of one event, as Oclgrind's plugins are: it
// finds the object the address belongs to (an array argument, a __shared__ variable, dynamic
// shared memory, a module variable), refuses an access outside it before it happens, and keeps a
// cell of shadow state per element (who wrote and read it last, in which barrier interval, whether
// atomically, whether it was ever written) to report uninitialised reads and races: in global
// memory, a word per element until some access needs the cell (cuforge/check_cell.h). The first
// report ends the launch (siglongjmp to the block's entry, as cuforge_cpu::fail does).
//
// A kernel that reaches memory only by indexing its array parameters has an indexed build instead
// (cuforge/_cpu/indexed.py): not instrumented, each index checked inline (cuforge/cpu_check.h) by
// the common case shared with this file (cuforge/check_cell.h), on the tables exported below
// (cuforge_check_by_region, cuforge_check_params), and handed to the same entry points where the
// common case does not decide it.
//
// Array arguments are copied for the launch into one mapping with unused address space between
// them, so that an index past an array's end lands in its own gap and not in the next array;
// the copies of what the kernel may write are copied back after it. Memory cuforge does not know
// (the fibers' stacks, the runtime's own, a pointer made from an integer) is not checked.
#include "cuforge_cpu_abi.h"
#include "cuforge/check_cell.h"

#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <cstdarg>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <mutex>
#include <new>
#include <vector>
#include <dlfcn.h>
#include <sys/mman.h>

extern "C" {
// One array argument of a checked launch (check.py's CheckArray).
struct cuforge_check_array {
    unsigned long long host;   // the caller's memory (0: a None argument)
    unsigned long long bytes;
    unsigned long long copy;   // out: the copy the kernel works on
    unsigned elem;             // bytes per element
    int intent;                // 0 In, 1 Out, 2 Array
    int param;                 // the parameter's index (its pointer in the launch's args is replaced)
    const char* name;          // "parameter 'y' (Array[float32])"
    unsigned floating;         // the bytes of its floating-point numbers (2, 4, 8; a complex's parts), or 0
    unsigned bfloat16;         // they are __nv_bfloat16's (floating: 2)
};
// One module variable of the kernel's library.
struct cuforge_check_var {
    unsigned long long address, bytes;
    const char* name;
};
// What the compilers' alignment check (UBSan's type-mismatch check) passes its handler: where,
// the type (its name quoted), log2 of its alignment and what the access was (0 load, 1 store,
// 2 reference binding, 3 member access, 4 member call, ...), in GCC's and clang's layout.
struct UbsanTypeDescriptor {
    unsigned short kind, info;
    char name[1];
};
struct UbsanTypeMismatch {
    const char* file;
    unsigned line, column;
    const UbsanTypeDescriptor* type;
    unsigned char log_alignment, kind;
};
// What the compilers' bounds check (UBSan's out-of-bounds check) passes its handler: where, the
// array's type ("float [4]") and the index's (an integer: info is log2 of its bits, times 2,
// plus 1 where it is signed).
struct UbsanOutOfBounds {
    const char* file;
    unsigned line, column;
    const UbsanTypeDescriptor* array;
    const UbsanTypeDescriptor* index;
};
// What the float-to-integer check passes its handler: where, and the two types (a floating-point
// type's info is its bits); the value goes by value (a float's or a double's bits).
struct UbsanFloatCast {
    const char* file;
    unsigned line, column;
    const UbsanTypeDescriptor* from;
    const UbsanTypeDescriptor* to;
};
// What the shift check (UBSan's shift-exponent check) passes its handler: where, and the types of
// the value shifted and of the amount; both go by value.
struct UbsanShift {
    const char* file;
    unsigned line, column;
    const UbsanTypeDescriptor* lhs;
    const UbsanTypeDescriptor* rhs;
};
struct cuforge_check_launch {
    int narrays, nvars;
    cuforge_check_array* arrays;
    cuforge_check_var* vars;
    unsigned long long pc;  // out: the report's code address, as an offset into its library
    char library[1024];     // out: that library's path
    const char* file;       // out: or the report's source file and line, where no code address says it
    unsigned line;
    unsigned unchecked;     // out: the accesses that reached memory the checker does not know (counted once per
                            // instruction while its site holds), and the code offsets of the first instructions
    unsigned long long unknown[8];  // (in `library`, unless a report took it), 0 past the last
};
}

namespace {

enum { CHECKED = 4 };  // cuforge_cpu_launch.status of a report (check.py: CHECKED)
enum Kind { OOB = 1, UNINIT = 2, RACE = 3, MISALIGNED = 4 };
const char* const KIND_NAMES[] = {"", "out-of-bounds", "uninitialized read", "data race", "misaligned access"};

using namespace cuforge_check;  // (the shadow's cell, its flags and the common case: shared with the indexed build's checks)

// What an access is besides a plain load or store: an atomic (which of its parts), or volatile.
// Atomics never race with atomics, nor with volatile accesses (both are strong operations in
// PTX's memory model), nor with a plain read that follows a compare-and-swap (a CAS loop's first
// read, which its CAS checks: the Programming Guide's pattern); with other plain accesses they
// do, and an atomic that reads (all but a store or an exchange) reads an element uninitialised.
// A_BLOCK: an atomic of the block's scope (atomicAdd_block and the like, which cpu_atomic.h marks
// with the consume order): atomic for the threads of its block only.
enum Access : unsigned { PLAIN = 0, A_READS = 1, A_WRITES = 2, A_CAS = 4, VOLATILE = 8, A_BLOCK = 16 };

enum RegionKind { ARG, VAR, SHARED, DYNAMIC, OTHER };
struct Region {
    uintptr_t base, end;  // the object's bytes
    uintptr_t lo, hi;     // the addresses attributed to it: the object and the gap around it
    unsigned elem;        // bytes per element (the index in reports)
    unsigned granule;     // bytes per cell of the shadow: a struct's members, a float2's halves, the parts
                          // of a complex or of dynamic shared memory carved into other types are apart
    RegionKind kind;
    bool init;            // its elements start initialised (not an Out argument's, not shared memory's)
    bool shadowed;        // written by the kernel: races and initialisation are tracked
    const char* name;
    Cell* cells;
    Word* words;  // global memory's: its first level (cuforge/check_cell.h); shared memory's: null
};

// ---------------------------------------------------------------- one checked launch
struct Launch {
    cuforge_cpu_launch* L = nullptr;
    cuforge_check_launch* C = nullptr;
    volatile unsigned serial = 0;
    volatile unsigned live = 0;  // the serial while the launch runs, else 0 (a worker's hooks check both in one load)
    unsigned n = 1;  // threads per block
    unsigned long long slack = 0;  // bytes of each block's arena past its dynamic shared memory
    std::vector<Region> regions;  // sorted by lo
    char* mapping = nullptr;
    size_t mapping_bytes = 0, mapping_used = 0;  // (used: the bytes of the launch's copies, page by page)
    size_t reach = 0;  // how far past an array's copy (before and after) its addresses go: its gap
    std::vector<std::pair<size_t, size_t>> resident;  // the last launch's copies (offset, bytes): pages it touched
    bool far_refused = false;  // the system refused the far layout's reservation once: not asked again
    // per block (the fence rule and grid syncs), each written by the worker that runs the block
    std::vector<uint8_t> fences, grid_syncs;
    std::vector<uint32_t> fence_seq, atomic_seq;
    std::atomic<uint32_t> seq{0};
    // The shuffles that read an undefined lane (cuforge_check_undefined), each site's first
    struct Undefined {
        const char* name;
        const char* file;
        unsigned line, src, thread;
        long long block;
    };
    std::mutex undefined_lock;
    std::vector<Undefined> undefined;
    std::atomic<unsigned> undefined_count{0};
    unsigned rerun = 0;  // 0, or which rerun of the launch this is (rerun_undefined)
    unsigned long long arena_span = 0;  // the bytes of a block's arena: static and dynamic shared memory, and slack
    std::atomic<bool> unchecked_writes{false};  // some of them wrote (a rerun would write there again)
    unsigned unchecked = 0;  // the accesses that reached memory it does not know (its workers' counts), and the first instructions
    std::atomic<void*> unknown[8];
    // Kept from launch to launch (faulting in and zeroing fresh pages cost more than the kernel):
    // the copies' mapping, and the shadow's two pools: of cells, which carry the launch serial they
    // belong to (a pool of their own: a cell's gen is always one of an earlier launch's, or 0), and
    // of words (cuforge/check_cell.h), cleared before each run of a launch
    struct Pool {
        char* base = nullptr;
        size_t bytes = 0, used = 0;
    } shadow, words;
    std::deque<std::string> names;  // (the names of arrays that share a buffer, made per launch)
};
Launch launch;
std::mutex launching;  // one checked launch at a time

// The region an access instruction found last, by its code address: an instruction of a loop
// mostly reaches one array, where the last region found alternates between a loop's arrays. A
// copy of the region, not a pointer to it: one load less on every access's path.
//
// A site's answer holds for the addresses a with a - from < span: for a region of the kernel's,
// those its instruction (of one size) reaches in bounds, so that one comparison both finds the
// region and checks the bounds (an access outside them takes the slow path, which reports it).
enum SiteMode : uint8_t {
    UNCHECKED,  // memory cuforge does not know, or its own
    BOUNDS,     // a region whose accesses are checked for bounds only (an In argument)
    WHOLE,      // a shadowed region whose cells are powers of two of bytes, the access one to four whole cells
    GENERAL,    // a shadowed region, any access (access())
};
struct alignas(128) Site {
    void* pc;
    uintptr_t from, span;
    SiteMode mode;
    uint8_t shift;    // WHOLE: the cell's size, log 2
    uint8_t cells;    // WHOLE: the cells an access covers
    uint32_t epoch;   // 0: global memory; else the worker's shared regions as they were (Current::epoch)
    Region region;    // (shared memory's: its addresses are offsets into the arena)
};
enum { SITES = 256 };

// ---------------------------------------------------------------- one worker's state
// A launch's blocks run at once on the runtime's workers (a cooperative launch's each on a thread
// of its own). A worker's state is found from the stack pointer: kernel code runs only on a
// worker's region (cuforge_cpu_abi.h), and by_region maps a region to its worker's state, one
// load where a thread-local from a library dlopen'd is a call into the dynamic linker.
//
// Workers update the shadow of global memory without a lock. Blocks that touch one element at
// once are a race between blocks (reported), or reads, or atomics: a torn update can lose one of
// two records of a race, and a record torn to no thread (w or r of 0) is taken for no access.
// A block's shared memory and its shadow are its worker's alone.
struct Current : View {  // (the head the common case reads: serial, the thread, the block's generations)
    uintptr_t region = 0;    // the worker's memory region (its header and its fibers' stacks)
    sigjmp_buf* jump = nullptr;
    long long block = -1;
    unsigned n = 1;
    char* arena = nullptr;
    cuforge_check_shared* table = nullptr;
    // Each thread's fences of this block (the release/acquire rule within a block, released()):
    // how many (View::thread_fences), the last one's place in the launch's sequence of fences and atomics and its warp's
    // __syncwarp generation then; and its last atomic's place. (Cleared at a block's start where
    // the last block fenced; an atomic's place from an earlier block is below any fence's of this one.)
    bool fenced = false;
    uint16_t fence_warp[CUFORGE_CPU_MAX_THREADS] = {};
    uint32_t fence_seq[CUFORGE_CPU_MAX_THREADS] = {};
    uint32_t atomic_seq[CUFORGE_CPU_MAX_THREADS] = {};
    bool polled[CUFORGE_CPU_MAX_THREADS] = {};  // a volatile access since the thread's last fence (its place: see count_atomic)
    // A thread that reads one address again and again with atomics or volatile loads is waiting for
    // another to change it (a spin): every POLLS such reads it lets the block's other threads run,
    // as a GPU runs them meanwhile (the kernel library's yield; a thread spinning without
    // __nanosleep would otherwise never see the flag another thread of its block sets).
    void (*yield)() = nullptr;
    bool atomics_since_barrier = false;  // (cuforge_check_sync)
    uintptr_t poll_at[CUFORGE_CPU_MAX_THREADS] = {};
    uint16_t polls[CUFORGE_CPU_MAX_THREADS] = {};
    unsigned shared_vars = 0;            // the table's declarations with regions below
    uint32_t epoch = 1;                  // counts the changes of `shared` (the sites that learnt a region of it)
    std::vector<Region> shared;          // its __shared__ variables, then dynamic shared memory
    std::vector<Cell> shared_cells;
    unsigned long long dynamic_bytes = 0;
    Site sites[SITES];             // (emptied at the worker's first block of a launch)
    // Local variables declared without an initializer (cuforge_check_local): a byte per byte of
    // the worker's region (its stacks), mapped on first use and touched only where such locals
    // live: 0, or the declaration (its index in local_sites, plus 1) of a byte not yet written.
    uint8_t* local_map = nullptr;
    unsigned locals = 0;                // the declarations whose scope has not ended (their guards)
    uintptr_t local_lo = UINTPTR_MAX, local_hi = 0;  // the offsets the map was marked at since it was clean
    struct LocalSite { const char* name; unsigned line; };
    std::vector<LocalSite> local_sites;  // the declarations met this launch (a report names one)
    // An index past its dimension that the bounds check saw (index_out_of_bounds), reported at the
    // thread's next access unless that access is outside its object, which the region's check
    // reports with the object's name and extent.
    struct Index { const UbsanOutOfBounds* data; uintptr_t value; void* pc; unsigned thread; } index_past{};
    // A plain write racing with another thread's plain write only (a write after write), held
    // until its store has run (the worker's next access, its next block, the launch's end): the
    // same bytes written again is no race (a flag that many threads set to true, as Rodinia's
    // bfs sets its `over`; compute-sanitizer's racecheck does not report it either); other bytes
    // are. `at`, `bytes`: the elements written by both; `old`: their bytes before this store.
    struct Waw {  // (held: View::held, the launch's serial)
        uintptr_t at;
        unsigned bytes;
        unsigned char old[16];
        Region r;
        uintptr_t a;     // the access, as the rules took it (a shared variable's: an offset in the arena)
        uint32_t other;  // the other writer
        void* pc;
        uint32_t who;
        unsigned t, block;
        uint16_t bar, warp;
        bool shared;
    } waw{};
    // The accesses of the launch `unknown_serial` that reached memory the checker does not know
    // (unknown_memory): counted by each worker, not on one counter that every worker's access
    // would pull from the others' caches, and summed after the blocks (kept past the thread's end).
    unsigned unknown_serial = 0, unknown_count = 0;
};
[[noreturn]] void report_index(Current* c);
const unsigned REGION_SHIFT = __builtin_ctzll(CUFORGE_CPU_REGION);
const size_t REGIONS = size_t(1) << (47 - REGION_SHIFT);  // x86-64's user address space, in regions
}  // namespace
// (declared in cuforge/check_cell.h, which the indexed build's checks read them through; zero pages,
// but for the regions of workers that ran checked blocks)
View* cuforge_check_by_region[REGIONS];
cuforge_check_param cuforge_check_params[CUFORGE_CHECK_PARAMS];
namespace {
View** const by_region = cuforge_check_by_region;

// A thread's state is never freed, since by_region may name it: a thread that ends gives it back.
std::mutex& spare_lock = *new std::mutex;  // (never destroyed: threads give theirs back as the process ends)
std::vector<Current*>& spare = *new std::vector<Current*>;
std::vector<Current*>& every = *new std::vector<Current*>;  // (each made: the launch's end settles their held writes)
struct Holder {
    Current* c = nullptr;
    ~Holder() {
        if (!c) return;
        std::lock_guard<std::mutex> hold(spare_lock);
        size_t i = c->region >> REGION_SHIFT;
        if (i < REGIONS && by_region[i] == c) by_region[i] = nullptr;
        c->serial = 0, c->region = 0;
        spare.push_back(c);
    }
};
thread_local Holder held;

// This thread's state, made on its first checked block.
Current* mine() {
    if (!held.c) {
        std::lock_guard<std::mutex> hold(spare_lock);
        if (spare.empty()) {
            held.c = new Current;
            every.push_back(held.c);
        } else {
            held.c = spare.back();
            spare.pop_back();
        }
    }
    return held.c;
}

inline uintptr_t stack_pointer() {
    uintptr_t sp;
    __asm__("movq %%rsp, %0" : "=r"(sp));
    return sp;
}

// The running CUDA thread's index in its block: the worker's (on the plain loop as on fibers).
inline unsigned thread_of(Current* c) { return *c->cur; }

void describe_thread(char* out, size_t size, unsigned long long block, unsigned t) {
    const cuforge_cpu_launch* L = launch.L;
    unsigned gx = L->grid[0], gy = L->grid[1], bx = L->block[0], by = L->block[1];
    snprintf(out, size, "thread (%u, %u, %u) of block (%llu, %llu, %llu)", t % bx, (t / bx) % by, t / (bx * by),
             block % gx, (block / gx) % gy, block / ((unsigned long long)gx * gy));
}

[[noreturn]] void report(Current* c, void* pc, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
// The launch's report, unless one came first: its message, and where its code address `pc` is.
void record(void* pc, const char* fmt, va_list ap) {
    cuforge_cpu_launch* L = launch.L;
    if (!__sync_bool_compare_and_swap(&L->status, 0, CHECKED)) return;
    vsnprintf(L->message, sizeof L->message, fmt, ap);
    Dl_info info;
    if (pc && dladdr(pc, &info) && info.dli_fname) {
        launch.C->pc = reinterpret_cast<uintptr_t>(pc) - 1 - reinterpret_cast<uintptr_t>(info.dli_fbase);
        snprintf(launch.C->library, sizeof launch.C->library, "%s", info.dli_fname);
    }
}
void record(void* pc, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void record(void* pc, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(pc, fmt, ap);
    va_end(ap);
}

// A report ends the block's run (the first of the launch's is kept).
[[noreturn]] void report(Current* c, void* pc, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(pc, fmt, ap);
    va_end(ap);
    siglongjmp(*c->jump, 1);
}

const char* what_of(const Region& r) {
    static thread_local char out[320];
    switch (r.kind) {
    case SHARED: snprintf(out, sizeof out, "__shared__ variable '%s'", r.name); break;
    case DYNAMIC: snprintf(out, sizeof out, "dynamic shared memory ('extern __shared__ %s')", r.name); break;
    case VAR: snprintf(out, sizeof out, "module variable '%s'", r.name); break;
    default: snprintf(out, sizeof out, "%s", r.name); break;
    }
    return out;
}

[[noreturn]] void out_of_bounds(Current* c, const Region& r, uintptr_t a, unsigned size, bool write, void* pc) {
    char who[160];
    describe_thread(who, sizeof who, c->block, thread_of(c));
    long long off = (long long)(a - r.base);
    long long index = off >= 0 ? off / (long long)r.elem : -((-off + r.elem - 1) / (long long)r.elem);
    unsigned long long extent = (r.end - r.base) / r.elem;
    report(c, pc, "out-of-bounds %s of %u bytes: %s, index %lld, outside its extent of %llu element%s (%u bytes "
           "each), by %s; the access was refused (nothing outside the arrays was touched); at @LINE@", write ? "write" : "read", size, what_of(r), index,
           extent, extent == 1 ? "" : "s", r.elem, who);
}

// The shadow's granule for elements of `elem` bytes: the largest of 4, 2, 1 that divides it (two
// threads may write two members of one struct, or two halves of a float2, at once).
inline unsigned granule_of(unsigned elem) { return elem % 4 == 0 ? 4 : elem % 2 == 0 ? 2 : 1; }

// ---------------------------------------------------------------- shared memory regions
__attribute__((noinline)) void resync_shared(Current* c, unsigned count, unsigned long long dyn) {
    cuforge_check_shared* t = c->table;
    c->shared.clear();
    size_t cells = 0;
    for (unsigned i = 0; i < count; ++i) {
        Region r{};
        r.base = uintptr_t(t->var[i].at), r.end = r.base + t->var[i].bytes;
        r.elem = unsigned(t->var[i].elem ? t->var[i].elem : 1), r.kind = SHARED, r.name = t->var[i].name;
        r.granule = granule_of(r.elem);
        r.shadowed = true;
        r.cells = reinterpret_cast<Cell*>(cells);
        cells += (r.end - r.base) / r.granule;
        c->shared.push_back(r);
    }
    if (dyn) {
        Region r{};
        r.base = CUFORGE_CPU_STATIC_SHARED, r.end = r.base + dyn;
        const char* name = t ? __atomic_load_n(&t->dynamic_name, __ATOMIC_ACQUIRE) : nullptr;  // (then its element size)
        r.elem = unsigned(name && t->dynamic_elem ? t->dynamic_elem : 1);
        if (dyn % r.elem) r.elem = 1;
        r.granule = 1;  // (often carved into arrays of other types, bytes among them)
        r.kind = DYNAMIC, r.name = name ? name : "[]";
        r.shadowed = true;
        r.cells = reinterpret_cast<Cell*>(cells);
        cells += dyn;
        c->shared.push_back(r);
    }
    std::sort(c->shared.begin(), c->shared.end(), [](const Region& a, const Region& b) { return a.base < b.base; });
    for (size_t i = 0; i < c->shared.size(); ++i) {  // each owns the gap up to halfway to its neighbours
        Region& r = c->shared[i];
        r.lo = i == 0 ? 0 : (c->shared[i - 1].end + r.base) / 2;
        r.hi = i + 1 == c->shared.size() ? CUFORGE_CPU_STATIC_SHARED + dyn + launch.slack : (r.end + c->shared[i + 1].base) / 2;
    }
    if (c->shared_cells.size() < cells) c->shared_cells.resize(cells + 1024);
    for (Region& r : c->shared) r.cells = c->shared_cells.data() + reinterpret_cast<size_t>(r.cells);
    c->shared_vars = count, c->dynamic_bytes = dyn;
    if (++c->epoch == 0) c->epoch = 1;
}

// The block's shared memory regions, as many as its code has reached the declarations of.
inline void sync_shared(Current* c) {
    cuforge_check_shared* t = c->table;
    unsigned count = t ? __atomic_load_n(&t->count, __ATOMIC_ACQUIRE) : 0;
    unsigned long long dyn = launch.L->shared_mem;
    if (__builtin_expect(count != c->shared_vars || dyn != c->dynamic_bytes || c->shared.empty(), 0))
        resync_shared(c, count, dyn);
}

// ---------------------------------------------------------------- the race rules
struct Me {
    uint32_t who;     // thread (shared) or launch-wide serial, plus 1
    unsigned t;       // thread in block
    unsigned block;
    uint16_t bar;
    uint16_t warp;
    bool shared;
};

inline bool same_block(const Me& me, uint32_t who) { return me.shared || (who - 1) / launch.n == me.block; }
inline unsigned thread_in_block(const Me& me, uint32_t who) { return me.shared ? who - 1 : (who - 1) % launch.n; }
// Volatile accesses by `who` and me are no race where we are in different warps: strong operations in
// PTX's memory model, as atomics are (a flag set by one warp or block and polled by another). Within
// a warp they are: warp-synchronous code over volatile shared memory needs __syncwarp() since Volta.
inline bool volatile_apart(const Me& me, uint32_t who) {
    return !same_block(me, who) || thread_in_block(me, who) / 32 != me.t / 32;
}

// Whether thread `other`'s write to memory of the block (its warp's generation then `warp`, its own fence
// count `fence`) was released to me, as a flag set with an atomic after __threadfence_block() and
// read with an atomic releases the data written before it: a thread fenced after the write (the
// writer, or a thread of its warp after a __syncwarp that followed it) and I did an atomic after
// that fence. (That my atomic read that thread's flag is not followed: this errs towards no report.)
//
// Global memory's cells keep the block's device fences, not the writer's own count (the rule
// between blocks needs those): there, a fence of the writer's before my atomic counts, whether
// or not it came after the write (this errs towards no report).
inline bool released(const Current* c, const Me& me, unsigned other, uint16_t warp, uint8_t fence) {
    uint32_t acquired = c->atomic_seq[me.t];
    auto before_mine = [&](unsigned p) { return c->fence_seq[p] != 0 && c->fence_seq[p] < acquired; };
    if ((!me.shared || c->thread_fences[other] != fence) && before_mine(other)) return true;
    unsigned first = other / 32 * 32, last = std::min(first + 32, c->n);
    for (unsigned p = first; p < last; ++p)
        if (int16_t(c->fence_warp[p] - warp) > 0 && before_mine(p)) return true;
    return false;
}

// Whether an earlier access by `who` (barrier generation bar, warp generation warp) is ordered before mine.
inline bool ordered(const Current* c, const Me& me, uint32_t who, uint16_t bar, uint16_t warp, uint8_t grid, uint8_t fence,
                    bool was_write) {
    if (who == me.who || who == 0) return true;  // (0: a record torn by two workers at once, no access)
    if (same_block(me, who)) {
        if (bar != me.bar) return true;  // a __syncthreads between
        unsigned other = thread_in_block(me, who);
        if (other / 32 == me.t / 32 && warp != c->warp_gen[me.t / 32]) return true;  // a __syncwarp between
        return was_write && c->fenced && released(c, me, other, warp, fence);
    }
    unsigned ob = (who - 1) / launch.n;
    if (ob >= launch.fences.size()) return true;
    if (launch.L->cooperative && grid != launch.grid_syncs[me.block]) return true;  // a grid.sync() between
    // __threadfence() then an atomic (a last-block reduction): the other block fenced after its write,
    // and this block did an atomic (or a volatile access: a poll) after that fence
    uint32_t acquired = launch.atomic_seq[me.block];
    if (was_write) return launch.fences[ob] != fence && acquired > launch.fence_seq[ob];
    // the same after the other block's read: the last block of a reduction rewrites what every block
    // read before its fence and ticket (that the fence came after the read is not followed: this errs
    // towards no report)
    return launch.fence_seq[ob] != 0 && acquired > launch.fence_seq[ob];
}

// Another block's atomic before this plain access, ordered as a last-block reduction orders its
// result: that block fenced (__threadfence) and this block did an atomic after the fence. (The
// fence may have come before the other block's atomic: this errs towards no report.)
inline bool after_fence_and_atomic(const Me& me, uint32_t who) {
    unsigned ob = (who - 1) / launch.n;
    return !me.shared && ob < launch.fence_seq.size() && ob != me.block && launch.fence_seq[ob] != 0 &&
           launch.atomic_seq[me.block] > launch.fence_seq[ob];
}

// A race's report (race_text: its message, in `out`).
void race_text(char* out, size_t size, const Me& me, const Region& r, uintptr_t a, bool write, uint32_t other, bool other_write,
               bool many, bool mine_atomic, bool other_atomic) {
    char mine[160], theirs[160];
    describe_thread(mine, sizeof mine, me.block, me.t);
    unsigned ob = me.shared || !other ? me.block : (other - 1) / launch.n;
    if (other) describe_thread(theirs, sizeof theirs, ob, thread_in_block(me, other));
    else snprintf(theirs, sizeof theirs, "other threads of the block");
    long long index = (long long)(a - r.base) / r.elem;
    const char* between = me.shared ? "with no __syncthreads() between them (nor a __syncwarp() for lanes of one warp)"
                          : ob == me.block ? "with no __syncthreads() between them"
                          : launch.L->cooperative ? "in different blocks with no grid.sync() between them"
                                                  : "in different blocks, which run concurrently on a GPU";
    snprintf(out, size, "data race on %s, index %lld (extent %llu): %s %s it, and %s%s %s it %s; reported whether or not "
             "the result came out right (order them with __syncthreads(), __syncwarp() or atomics); at @LINE@", what_of(r), index,
             (unsigned long long)((r.end - r.base) / r.elem), mine, mine_atomic ? "atomically updates" : write ? "writes" : "reads",
             theirs, many && other ? " (among other threads)" : "", other_atomic ? "atomically updated" : other_write ? "wrote" : "read",
             between);
}
[[noreturn]] void race(Current* c, const Me& me, const Region& r, uintptr_t a, bool write, uint32_t other, bool other_write,
                       bool many, void* pc, bool mine_atomic = false, bool other_atomic = false) {
    char text[sizeof launch.L->message];
    race_text(text, sizeof text, me, r, a, write, other, other_write, many, mine_atomic, other_atomic);
    report(c, pc, "%s", text);
}

// A write after another thread's write, held (Current::waw): the bytes of cell `i` of r that the
// access writes, and what they hold now. (A range access, over 16 bytes, is reported at once.)
void hold_waw(Current* c, const Me& me, const Region& r, uintptr_t a, unsigned size, size_t i, uint32_t other, void* pc) {
    uintptr_t origin = me.shared ? reinterpret_cast<uintptr_t>(c->arena) : 0;  // (a shared region's offsets: the arena's)
    uintptr_t from = std::max<uintptr_t>(r.base + i * r.granule, a) + origin;
    uintptr_t to = std::min<uintptr_t>(r.base + (i + 1) * r.granule, a + size) + origin;
    Current::Waw& h = c->waw;
    if (c->held == launch.serial && h.pc == pc && h.a == a && from >= h.at && to - h.at <= sizeof h.old) {  // (this access's next cell)
        memcpy(h.old + (from - h.at), reinterpret_cast<const void*>(from), to - from);
        h.bytes = unsigned(std::max<uintptr_t>(h.at + h.bytes, to) - h.at);
        return;
    }
    if (size > sizeof h.old) race(c, me, r, a, true, other, true, false, pc);
    c->held = launch.serial, h.at = from, h.bytes = unsigned(to - from), h.r = r, h.a = a, h.other = other, h.pc = pc;
    h.who = me.who, h.t = me.t, h.block = me.block, h.bar = me.bar, h.warp = me.warp, h.shared = me.shared;
    memcpy(h.old, reinterpret_cast<const void*>(from), h.bytes);
}
// The held write's store has run: the race's message where it wrote other bytes (true), else it is let go.
bool waw_differs(Current* c, char* text, size_t size) {
    Current::Waw& h = c->waw;
    bool differs = c->held == launch.serial && memcmp(reinterpret_cast<const void*>(h.at), h.old, h.bytes) != 0;
    if (differs) {
        Me me{h.who, h.t, h.block, h.bar, h.warp, h.shared};
        race_text(text, size, me, h.r, h.a, true, h.other, true, false, false, false);
    }
    c->held = 0;
    return differs;
}
__attribute__((noinline, cold)) void settle_waw(Current* c) {
    char text[sizeof launch.L->message];
    void* pc = c->waw.pc;
    if (waw_differs(c, text, sizeof text)) report(c, pc, "%s", text);
}

// The element at byte offset `off` of a region (a power of two's division is a shift: a 64-bit
// division was a tenth of an access's cost).
inline size_t index_of(const Region& r, uintptr_t off) {
    unsigned e = r.granule;
    return (e & (e - 1)) == 0 ? off >> __builtin_ctz(e) : off / e;
}

[[noreturn]] void uninitialized(Current* c, const Me& me, const Region& r, size_t cell, void* pc, bool atomic) {
    size_t i = cell * r.granule / r.elem;  // (the element)
    char who[160];
    describe_thread(who, sizeof who, c->block, me.t);
    report(c, pc, "uninitialized read: %s, index %zu (extent %llu), is read by %s%s before %s; %s; at @LINE@", what_of(r), i,
           (unsigned long long)((r.end - r.base) / r.elem), who, atomic ? " (an atomic read-modify-write reads it)" : "",
           me.shared ? "any thread of the block wrote it" : "the kernel wrote it",
           me.shared ? "shared memory starts undefined in each block: write it (and __syncthreads()) first"
                     : "an Out[...] argument starts undefined on a GPU: write it first, or declare it "
                       "Array[...] to read what the caller passed");
}

// A write (plain or atomic) against the reads before it: another thread's not ordered before it,
// or its own where others read in the same interval.
inline void after_reads(Current* c, const Me& me, const Region& r, uintptr_t a, const Cell& cell, bool atomic, void* pc,
                        bool volatile_write = false) {
    if (!(cell.flags & R_SET) || (volatile_write && (cell.flags & R_VOLATILE) && volatile_apart(me, cell.r))) return;
    if (cell.r != me.who && !ordered(c, me, cell.r, cell.r_bar, cell.r_warp, cell.r_grid, 0, false))
        race(c, me, r, a, true, cell.r, false, cell.flags & R_MANY, pc, atomic, false);
    if (cell.r == me.who && (cell.flags & R_MANY) && cell.r_bar == me.bar && cell.r_warp == me.warp)
        race(c, me, r, a, true, 0, false, true, pc, atomic, false);
}

// Element i's full cell, of a region of global memory (out of line: rules' path for shared memory stays short).
__attribute__((noinline)) Cell& expanded(const Current* c, const Region& r, size_t i) {
    return expand(r.words[i], r.cells[i], c->serial, c->bar0);
}

// The race and initialisation rules, for what the common cases (no_other_thread) leave.
__attribute__((noinline)) void rules(Current* c, const Region& r, uintptr_t a, unsigned size, bool write, unsigned kind, void* pc) {
    Me me;
    me.t = thread_of(c);
    me.shared = r.kind == SHARED || r.kind == DYNAMIC;
    me.block = unsigned(c->block);
    me.who = me.shared ? me.t + 1 : uint32_t(c->block * launch.n + me.t + 1);
    me.bar = uint16_t(*c->bar_gen);
    me.warp = c->warp_gen[me.t / 32];
    uint32_t gen = me.shared ? c->gen : launch.serial;
    size_t first = index_of(r, a - r.base), last = index_of(r, a + size - 1 - r.base);
    for (size_t i = first; i <= last; ++i) {
        Cell& cell = r.words ? expanded(c, r, i) : r.cells[i];
        if (cell.gen != gen) cell = Cell{gen, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  // another block's, or launch's: untouched
        bool init = r.init || (cell.flags & INIT);
        bool written = (cell.flags & W_SET) && cell.w != me.who;
        bool read = (cell.flags & R_SET) && cell.r != me.who, by_atomic = cell.flags & R_ATOMIC;
        if (kind & (A_READS | A_WRITES)) {  // an atomic
            if ((kind & A_READS) && !init) uninitialized(c, me, r, i, pc, true);
            if (written && !(cell.flags & W_VOLATILE) &&
                !ordered(c, me, cell.w, cell.w_bar, cell.w_warp, cell.w_grid, cell.w_fence, true))
                race(c, me, r, a, true, cell.w, true, false, pc, true, false);
            // a block-scope atomic is no atomic for another block's: the two race unless ordered
            if ((kind & A_BLOCK) && read && by_atomic && !same_block(me, cell.r) &&
                !ordered(c, me, cell.r, cell.r_bar, cell.r_warp, cell.r_grid, 0, false))
                race(c, me, r, a, true, cell.r, true, false, pc, true, true);
            if (!(kind & A_WRITES)) continue;
            if (!by_atomic && !(kind & A_CAS) && !(cell.flags & R_VOLATILE))  // (not a poll; a CAS loop's reads come first)
                after_reads(c, me, r, a, cell, true, pc);
            // The last atomic writer takes the reader's fields (it forgets the reads before it, as a write
            // does); the last plain write stays, for the atomics of other blocks to be checked against.
            // Where there is none, the writer's fields keep the last atomic writer of another block than
            // the reader's fields name: a histogram that every block adds to and the last block reads,
            // whose own atomics would otherwise hide the other blocks'.
            if ((cell.flags & R_ATOMIC) && !(cell.flags & W_SET) && !same_block(me, cell.r))
                cell.w = cell.r, cell.w_bar = cell.r_bar, cell.w_warp = cell.r_warp, cell.w_grid = cell.r_grid, cell.w_fence = 0;
            cell.r = me.who, cell.r_bar = me.bar, cell.r_warp = me.warp;
            cell.r_grid = me.shared ? 0 : launch.grid_syncs[me.block];
            cell.flags = uint8_t((cell.flags & (W_SET | W_VOLATILE)) | INIT | R_SET | R_ATOMIC | ((kind & A_CAS) ? R_CAS : 0));
            continue;
        }
        bool both_volatile = (kind & VOLATILE) && (cell.flags & W_VOLATILE) && volatile_apart(me, cell.w);
        if (written && !both_volatile && !ordered(c, me, cell.w, cell.w_bar, cell.w_warp, cell.w_grid, cell.w_fence, true)) {
            if (write && kind == PLAIN) hold_waw(c, me, r, a, size, i, cell.w, pc);  // (the same bytes again: no race)
            else race(c, me, r, a, write, cell.w, true, false, pc);
        }
        if (by_atomic) {  // after an atomic: a race unless ordered, volatile, or a read after a CAS
            auto unordered = [&](uint32_t who, uint16_t bar, uint16_t warp, uint8_t grid) {
                bool excused = (kind & VOLATILE) || (!write && (cell.flags & R_CAS)) || after_fence_and_atomic(me, who);
                return !excused && !ordered(c, me, who, bar, warp, grid, 0, false);
            };
            if (read && unordered(cell.r, cell.r_bar, cell.r_warp, cell.r_grid))
                race(c, me, r, a, write, cell.r, true, false, pc, false, true);
            uint32_t kept = (cell.flags & W_SET) ? 0 : cell.w;  // (another block's atomic, kept: see above)
            if (kept && kept != me.who && unordered(kept, cell.w_bar, cell.w_warp, cell.w_grid))
                race(c, me, r, a, write, kept, true, false, pc, false, true);
            if (!(cell.flags & W_SET)) cell.w = 0;
            cell.flags = uint8_t(cell.flags & ~(R_SET | R_MANY | R_ATOMIC | R_CAS | R_VOLATILE));  // (it is ordered before this access)
        }
        if (!write) {
            if (!init) uninitialized(c, me, r, i, pc, false);
            if ((cell.flags & R_SET) && cell.r == me.who) {  // the same reader again: others stay known in their interval
                if (cell.r_bar != me.bar || cell.r_warp != me.warp) cell.flags &= uint8_t(~R_MANY);
                cell.r_bar = me.bar, cell.r_warp = me.warp;
            } else if ((cell.flags & R_SET) && !ordered(c, me, cell.r, cell.r_bar, cell.r_warp, cell.r_grid, 0, false)) {
                cell.flags |= R_MANY;
                if (!(kind & VOLATILE)) cell.flags &= uint8_t(~R_VOLATILE);  // (not all of them polls)
            } else {
                cell.r = me.who, cell.r_bar = me.bar, cell.r_warp = me.warp;
                cell.r_grid = me.shared ? 0 : launch.grid_syncs[me.block];
                cell.flags = uint8_t((cell.flags & ~(R_MANY | R_VOLATILE)) | R_SET | ((kind & VOLATILE) ? R_VOLATILE : 0));
            }
            continue;
        }
        after_reads(c, me, r, a, cell, false, pc, (kind & VOLATILE) != 0);
        cell.w = me.who, cell.w_bar = me.bar, cell.w_warp = me.warp;
        cell.w_grid = me.shared ? 0 : launch.grid_syncs[me.block];
        cell.w_fence = me.shared ? c->thread_fences[me.t] : c->fences;
        cell.flags = uint8_t(INIT | W_SET | ((kind & VOLATILE) ? W_VOLATILE : 0));  // a write forgets the reads before it
    }
}

// The common cases for element i of a shadowed region: no_other_thread (global memory's first on
// its word). Global memory's are out of line (global_common): the path of shared memory's accesses,
// which shares their hook, then saves no more registers than its own need.
template <bool shared> __attribute__((always_inline)) inline bool common_case(Current* c, const Region& r, size_t i, bool write) {
    if (shared) return no_other_thread(c, r.cells[i], true, r.init, write);  // (shared memory's: never init)
    return word_common(c, r.words[i], r.init, write) || no_other_thread(c, expanded(c, r, i), false, r.init, write);
}
__attribute__((noinline)) bool global_common(Current* c, const Region& r, size_t i, bool write) {
    return common_case<false>(c, r, i, write);
}

// One access to a region: refused outside it, then the common cases, then the rules.
__attribute__((always_inline)) inline void access(Current* c, const Region& r, uintptr_t a, unsigned size, bool write,
                                                  unsigned kind, void* pc) {
    if (__builtin_expect(a - r.base > r.end - r.base - size || size > r.end - r.base, 0))
        out_of_bounds(c, r, a, size, write, pc);
    if (!r.shadowed) return;
    if (kind == PLAIN) {
        uintptr_t off = a - r.base;
        size_t i = index_of(r, off);
        if (index_of(r, off + size - 1) == i && (r.words ? global_common(c, r, i, write) : common_case<true>(c, r, i, write))) return;
    }
    rules(c, r, a, size, write, kind, pc);
}

// The state of the worker whose stack `sp` is on, while it runs a block of the checked launch.
inline Current* active_at(uintptr_t sp) {
    size_t i = sp >> REGION_SHIFT;
    Current* c = i < REGIONS ? static_cast<Current*>(by_region[i]) : nullptr;
    return c && c->serial == launch.live ? c : nullptr;
}
inline Current* active() { return active_at(stack_pointer()); }

// An array parameter's region as an indexed kernel's inline checks take it (cuforge/check_cell.h):
// where its cells are powers of two of bytes, and it holds one at least; else none is taken inline.
cuforge_check_param indexed_param(const Region& r) {
    size_t bytes = r.end - r.base;
    unsigned g = r.granule;
    if (!g || (g & (g - 1)) || bytes < g || r.base % g || (r.shadowed && !r.words)) return cuforge_check_param{};
    return cuforge_check_param{bytes / g, g, r.shadowed ? r.words : nullptr, r.init};
}

// The region of address a, or null; [*from, *to) the addresses that find the same answer.
__attribute__((noinline)) const Region* find_global_slow(uintptr_t a, uintptr_t* from, uintptr_t* to) {
    const std::vector<Region>& rs = launch.regions;
    size_t lo = 0, hi = rs.size();
    while (lo < hi) {  // the last region whose lo <= a
        size_t mid = (lo + hi) / 2;
        if (rs[mid].lo <= a) lo = mid + 1; else hi = mid;
    }
    const Region* r = lo && a < rs[lo - 1].hi ? &rs[lo - 1] : nullptr;
    *from = r ? r->lo : lo ? rs[lo - 1].hi : 0;
    *to = r ? r->hi : lo < rs.size() ? rs[lo].lo : UINTPTR_MAX;
    return r;
}

inline Site& site_of(Current* c, void* pc) { return c->sites[(reinterpret_cast<uintptr_t>(pc) >> 1) & (SITES - 1)]; }

// no_other_thread for each cell of a WHOLE site's access at `a` (the rules take the access where one is not).
template <bool shared> __attribute__((always_inline)) inline bool no_other_threads(Current* c, const Site& s, uintptr_t a, bool write) {
    size_t i = (a - s.from) >> s.shift;
    if (shared) {
        Cell* cell = s.region.cells + i;
        for (unsigned k = 0; k < s.cells; ++k)
            if (!no_other_thread(c, cell[k], true, s.region.init, write)) return false;  // (shared memory's: never init)
        return true;
    }
    for (unsigned k = 0; k < s.cells; ++k)
        if (!common_case<false>(c, s.region, i + k, write)) return false;
    return true;
}

// A plain access of global memory that a WHOLE site answered (out of line: see common_case).
__attribute__((noinline)) void observe_whole(Current* c, const Site& s, uintptr_t a, unsigned size, bool write, void* pc) {
    if (!no_other_threads<false>(c, s, a, write)) rules(c, s.region, a, size, write, PLAIN, pc);
}

// An atomic's or a volatile access's place in the launch's sequence (the fence rules': kernel memory
// only): either can be the poll of a flag that another thread set after a fence.
//
// The place is taken before the access runs, which another block's fence can fall between: the
// poll that reads a flag set after that fence would seem to come before the fence. So an atomic
// takes its place again once it is done (atomic_done), and a volatile access, which the kernel's
// own code makes after its hook, at the thread's next fence (a poll, then __threadfence()).
// A block-scope atomic orders nothing for other blocks: it takes a place for its thread only.
inline void take_place(Current* c, unsigned t, unsigned kind) {
    c->atomic_seq[t] = ++launch.seq;
    if (!(kind & A_BLOCK)) launch.atomic_seq[c->block] = c->atomic_seq[t];
}
inline void count_atomic(Current* c, unsigned kind) {
    if (!(kind & (A_READS | A_WRITES | VOLATILE))) return;
    unsigned t = thread_of(c);
    take_place(c, t, kind);
    if (kind & VOLATILE) c->polled[t] = true;
    c->atomics_since_barrier = true;
}

// What a site learns of the region an access of `size` bytes at `a` found (`from`: where the
// region's offsets start; `epoch`: 0 for global memory, else the worker's shared regions').
void learn(Site& s, void* pc, const Region& r, uintptr_t from, unsigned size, uint32_t epoch) {
    s.pc = pc, s.epoch = epoch, s.region = r;
    uintptr_t bytes = r.end - r.base;
    unsigned g = r.granule;
    bool whole = (g & (g - 1)) == 0 && size % g == 0 && size / g <= 4 && r.base % g == 0;
    s.mode = !r.shadowed ? BOUNDS : whole ? WHOLE : GENERAL;
    s.shift = uint8_t(__builtin_ctz(g)), s.cells = uint8_t(whole ? size / g : 0);
    s.from = from + r.base, s.span = bytes >= size ? bytes - size + 1 : 0;  // (outside them: the slow path, which reports it)
}

// An access to the block's shared memory (its arena), found and checked in full (`learn`: see observe_global).
__attribute__((noinline)) void observe_shared(Current* c, uintptr_t a, unsigned size, bool write, unsigned kind, void* pc,
                                              bool learns) {
    sync_shared(c);
    uintptr_t arena = reinterpret_cast<uintptr_t>(c->arena), off = a - arena;  // (wraps below the arena: compared as signed)
    const Region* r = nullptr;
    for (const Region& s : c->shared) {
        if ((intptr_t)off >= (intptr_t)s.lo && (intptr_t)off < (intptr_t)s.hi) { r = &s; break; }
    }
    if (!r && !c->shared.empty()) r = &c->shared.back();
    if (r) {
        if (learns) learn(site_of(c, pc), pc, *r, arena, size, c->epoch);
        count_atomic(c, kind);
        access(c, *r, off, size, write, kind, pc);
    }
    if (__builtin_expect(c->index_past.data != nullptr, 0)) report_index(c);
}

// An access outside the kernel's memory while local variables without an initializer live
// (cuforge_check_local): one of them read before it was written is reported, a write marks its
// bytes written.
__attribute__((noinline)) void observe_local(Current* c, uintptr_t a, unsigned size, bool write, void* pc) {
    uintptr_t off = a - c->region;
    if (off >= CUFORGE_CPU_REGION - size || !c->local_map) return;  // (another worker's memory, or cuforge's)
    uint8_t* m = c->local_map + off;
    unsigned site = 0;
    for (unsigned k = 0; k < size && !site; ++k) site = m[k];
    if (!site) return;
    if (write) { memset(m, 0, size); return; }
    const Current::LocalSite& d = c->local_sites[site - 1];
    char who[160];
    describe_thread(who, sizeof who, c->block, thread_of(c));
    report(c, pc, "uninitialized read: local variable '%s' (declared at line %u without an initializer) is read by %s "
           "before it was written; a local variable holds an undefined value on a GPU until it is assigned: give it "
           "an initial value where it is declared; at @LINE@", d.name, d.line, who);
}

// An instruction reached memory that is none of the kernel's arrays, shared memory or module
// variables, nor the worker's stacks: a pointer made from an integer or read from memory, another
// block's shared memory, or cuforge's own runtime inlined into the kernel. Not checked; counted
// once per instruction while its site holds, and the first instructions kept: the launch's caller
// warns of those in the kernel's own source.
__attribute__((noinline, cold)) void unknown_memory(Current* c, void* pc) {
    if (c->unknown_serial != launch.serial) c->unknown_serial = launch.serial, c->unknown_count = 0;
    ++c->unknown_count;
    for (std::atomic<void*>& slot : launch.unknown) {
        void* held = slot.load(std::memory_order_relaxed);
        if (held == pc) return;
        if (!held && slot.compare_exchange_strong(held, pc, std::memory_order_relaxed)) return;
        if (held == pc) return;  // (another thread put it there)
    }
}

// An access to global memory, found and checked in full (`learn`: and its instruction's site
// learns the answer, for an instruction of one size). An address in the gap around the region
// its instruction found last is that region's: one past a module variable's end may be where
// cuforge's own data begins, but this instruction reached the variable.
__attribute__((noinline)) void observe_global(Current* c, uintptr_t a, unsigned size, bool write, unsigned kind, void* pc,
                                              bool learns) {
    Site& last = site_of(c, pc);
    // (one past the region's end too: where the next object begins right there, an instruction
    // that indexed this one indexes past its end, lut[256], not the next object's first element)
    if (learns && last.pc == pc && last.epoch == 0 && last.mode != UNCHECKED &&
        (a - last.region.lo < last.region.hi - last.region.lo || a == last.region.end)) {
        count_atomic(c, kind);
        access(c, last.region, a, size, write, kind, pc);
        if (__builtin_expect(c->index_past.data != nullptr, 0)) report_index(c);
        return;
    }
    uintptr_t from, to;
    const Region* r = find_global_slow(a, &from, &to);
    bool known = r && r->kind != OTHER;  // (memory cuforge does not know, or its own: not checked)
    if (learns && known) learn(last, pc, *r, 0, size, 0);
    if (learns && !known) last.pc = pc, last.epoch = 0, last.mode = UNCHECKED, last.from = from, last.span = to - from;
    if (!known && !r && ((a ^ c->region) & ~uintptr_t(CUFORGE_CPU_REGION - 1)) != 0) {
        if (write && !launch.unchecked_writes.load(std::memory_order_relaxed)) launch.unchecked_writes.store(true);
        unknown_memory(c, pc);
    }
    if (known) {
        count_atomic(c, kind);
        access(c, *r, a, size, write, kind, pc);
    }
    if (__builtin_expect(c->index_past.data != nullptr, 0)) report_index(c);
    if (!known && c->locals) observe_local(c, a, size, write, pc);
}

// One access of the kernel's code: the hooks below, each with its size, direction and kind
// known. `sited`: an instruction of one size (a range's size is its call's), whose site may
// answer it. Every path out of line is a tail call: the common one saves no registers.
template <bool sited>
__attribute__((always_inline)) inline void observe(uintptr_t a, unsigned size, bool write, unsigned kind, void* pc) {
    Current* c = active_at(stack_pointer());
    if (!c) return;
    if (__builtin_expect(c->held != 0, 0)) settle_waw(c);  // (its store has run by now)
    uintptr_t arena = reinterpret_cast<uintptr_t>(c->arena);
    Site& s = site_of(c, pc);
    if (a - arena < launch.arena_span) {  // shared memory (only the arena's own bytes)
        if (!sited || __builtin_expect(s.pc != pc || s.epoch != c->epoch || a - s.from >= s.span, 0))
            return observe_shared(c, a, size, write, kind, pc, sited);
        if (kind != PLAIN) {
            count_atomic(c, kind);
            return access(c, s.region, a - arena, size, write, kind, pc);
        }
        if (s.mode == WHOLE && (size == 1 || a % size == 0) && no_other_threads<true>(c, s, a, write)) return;
        return rules(c, s.region, a - arena, size, write, kind, pc);
    }
    if (!sited || __builtin_expect(s.pc != pc || s.epoch != 0 || a - s.from >= s.span, 0))
        return observe_global(c, a, size, write, kind, pc, sited);
    if (s.mode == UNCHECKED) {  // (the worker's own stacks among such memory)
        if (__builtin_expect(c->locals != 0, 0)) return observe_local(c, a, size, write, pc);
        return;
    }
    if (kind != PLAIN) {
        count_atomic(c, kind);
        return access(c, s.region, a, size, write, kind, pc);
    }
    if (s.mode == BOUNDS) return;
    if (s.mode == WHOLE && (size == 1 || a % size == 0)) return observe_whole(c, s, a, size, write, pc);
    return rules(c, s.region, a, size, write, kind, pc);
}

// Whether address a is the kernel's memory, where a misaligned access is reported: its block's
// shared memory or an object the launch knows, not the worker's stacks.
bool kernel_memory(Current* c, uintptr_t a) {
    if (((a ^ c->region) & ~uintptr_t(CUFORGE_CPU_REGION - 1)) == 0) return false;
    uintptr_t from, to;
    return a - reinterpret_cast<uintptr_t>(c->arena) < CUFORGE_CPU_STATIC_SHARED + launch.L->shared_mem ||
           find_global_slow(a, &from, &to);
}

__attribute__((noinline, cold)) void misaligned(uintptr_t a, unsigned size, bool write, void* pc) {
    Current* c = active();
    if (!c || size <= 1 || a % size == 0 || !kernel_memory(c, a)) return;
    char who[160];
    describe_thread(who, sizeof who, c->block, thread_of(c));
    report(c, pc, "misaligned %s of %u bytes at address %p (not a multiple of %u) by %s; on a GPU this is a "
           "misaligned address error (a vector load or store, or an atomic, needs an address aligned to its size); at @LINE@",
           write ? "write" : "read", size, reinterpret_cast<void*>(a), size, who);
}

// A type's name as the compilers give it, less its quotes and qualifiers ("'const struct float4'").
void type_name(char* out, size_t size, const UbsanTypeDescriptor* type) {
    const char* name = type ? type->name : "";
    size_t n = strlen(name);
    if (n >= 2 && name[0] == '\'' && name[n - 1] == '\'') ++name, n -= 2;
    for (const char* word : {"const ", "volatile ", "struct ", "union ", "class "})
        if (n >= strlen(word) && strncmp(name, word, strlen(word)) == 0) name += strlen(word), n -= strlen(word);
    snprintf(out, size, "%.*s", int(n < size ? n : size - 1), name);
}

// A typed access (a load, a store, a member's) through a pointer not aligned to its type: what
// the compiler's alignment check (-fsanitize=alignment, check.py) reports. Reported where it is
// the kernel's memory, as misaligned() does: a float2 at an odd float, a __half2 at an odd half.
// The GPU's types have the same alignment here (CUDA's own vector_types.h and cuda_fp16.h), and
// on a GPU such an access is a misaligned address error, or a wrong value where nvcc splits it.
__attribute__((noinline, cold)) void misaligned_type(const UbsanTypeMismatch* data, uintptr_t a, void* pc) {
    Current* c = active();
    unsigned align = 1u << data->log_alignment;
    if (!c || align <= 1 || a % align == 0 || !kernel_memory(c, a)) return;
    char who[160], type[96];
    describe_thread(who, sizeof who, c->block, thread_of(c));
    type_name(type, sizeof type, data->type);
    static const char* const WHAT[] = {"read of", "write of"};  // (else a reference bound, a member reached: a copy's)
    report(c, pc, "misaligned %s a %s (aligned to %u bytes) at address %p (not a multiple of %u) by %s; on a GPU "
           "this is a misaligned address error (an access must be aligned to its type); at @LINE@",
           data->kind < 2 ? WHAT[data->kind] : "access to", type, align, reinterpret_cast<void*>(a), align, who);
}

// An index past a dimension of an array whose extent the compiler knows (-fsanitize=bounds,
// check.py): a struct's member array (an index past it lands in the next member), a dimension of
// a multi-dimensional __shared__ array (an index past a row lands in the next row), a local
// array. The address may be inside the object, where the region's own check sees nothing.
//
// Reported at the thread's next access (the access itself, mostly): the sites answer no address
// now, so that it takes a slow path, which reports it unless the region's check finds the address outside its
// object (then named, with its extent).
__attribute__((noinline, cold)) void index_out_of_bounds(const UbsanOutOfBounds* data, uintptr_t value, void* pc) {
    Current* c = active();
    if (!c || c->index_past.data) return;
    c->index_past = {data, value, pc, thread_of(c)};  // (the thread: on the plain loop the next one may be running then)
    for (Site& site : c->sites) site.span = 0;  // (each keeps its region: an address in its gap is still its region's)
}

// An integer a UBSan check passed by value, as wide and as signed as its type (`type`: an integer's
// info is log2 of its bits, times 2, plus 1 where it is signed).
long long ubsan_integer(const UbsanTypeDescriptor* type, uintptr_t value) {
    if (!type || type->kind != 0) return (long long)value;
    unsigned bits = 1u << (type->info >> 1);
    if (bits >= 64) return (long long)value;
    if ((type->info & 1) && (value >> (bits - 1) & 1)) return (long long)(value | (~0ull << bits));
    return (long long)(value & ((1ull << bits) - 1));
}

// A shift by a negative amount or by the width of its type or more (the shift check's handler,
// below): undefined in C++, and a GPU and a CPU give different results (PTX's shift instructions
// clamp the amount, x86's take it modulo the width: `(1u << n) - 1` for n = 32 is a full warp's
// mask on a GPU, 0 on the CPU).
__attribute__((noinline, cold)) void shift_out_of_bounds(const UbsanShift* data, uintptr_t amount, void* pc) {
    Current* c = active();
    if (!c) return;
    long long by = ubsan_integer(data->rhs, amount);
    unsigned width = data->lhs && data->lhs->kind == 0 ? 1u << (data->lhs->info >> 1) : 0;
    char who[160], type[96];
    describe_thread(who, sizeof who, c->block, thread_of(c));
    type_name(type, sizeof type, data->lhs);
    report(c, pc, "undefined behaviour: a shift of a %u-bit %s by %lld in %s: C++ leaves a shift by a negative amount or "
           "by the type's width or more undefined, and a GPU and the CPU compute it differently (a GPU's shift gives 0, "
           "or the sign's bits for a negative value shifted right; the CPU's shifts by the amount modulo the width); "
           "shift by less than the width (a mask of the first n lanes: n == 32 ? 0xffffffffu : (1u << n) - 1); at @LINE@",
           width, type, by, who);
}

[[noreturn]] void report_index(Current* c) {
    const UbsanOutOfBounds* data = c->index_past.data;
    long long index = ubsan_integer(data->index, c->index_past.value);
    char who[160], type[96];
    describe_thread(who, sizeof who, c->block, c->index_past.thread);
    type_name(type, sizeof type, data->array);
    report(c, c->index_past.pc, "out-of-bounds: index %lld into a %s (a struct's member array, a row of a multi-dimensional "
           "array, or a local array) by %s: an index past the extent it indexes reaches the next member or row, or leaves "
           "the object, even where the address is inside the object; at @LINE@", index, type, who);  // (report's pc below: the index's, not the access's)
}

void atomic_event(void* pc, uintptr_t a, unsigned size, unsigned kind) {
    if (__builtin_expect(a % size != 0, 0)) misaligned(a, size, (kind & A_WRITES) != 0, pc);  // (an x86 lock splits it)
    observe<true>(a, size, (kind & A_WRITES) != 0, kind, pc);
}

enum { POLLS = 32 };
// A read of `a` by an atomic or a volatile load (see Current::poll_at): after POLLS in a row, a yield.
inline void poll(Current* c, uintptr_t a) {
    unsigned t = thread_of(c);
    if (c->poll_at[t] != a) {
        c->poll_at[t] = a, c->polls[t] = 0;
        return;
    }
    if (++c->polls[t] < POLLS || !c->yield) return;
    c->polls[t] = 0;
    c->yield();  // (the other threads run; this one comes back here, where nothing of it is held)
}

// An atomic of the kernel's memory is done: its place in the sequence again (count_atomic); a
// read of the same address again, a spin's (poll).
void atomic_done(unsigned kind, uintptr_t a) {
    Current* c = active();
    if (!c) return;
    unsigned t = thread_of(c);
    if (!c->atomic_seq[t]) return;
    take_place(c, t, kind);
    poll(c, a);
}
// The scope an atomic's memory order marks (cpu_atomic.h): the block's, or the device's.
inline unsigned scope_of(int order) { return order == __ATOMIC_CONSUME ? A_BLOCK : 0; }

std::mutex wide;  // 16-byte atomics

void fence_event(bool block_scope = false);

}  // namespace

// ---------------------------------------------------------------- the interface
extern "C" {

// A block of a checked launch starts (cuforge/cpu_check.h calls this before its first thread's body).
CUFORGE_CPU_API void cuforge_check_thread(sigjmp_buf* jump, long long block, const unsigned* cur, unsigned n, char* arena,
                                          const unsigned* bar_gen, cuforge_check_shared* table, void (*yield)()) {
    Current* c = mine();
    if (c->serial != launch.serial) {  // its first block of this launch
        c->serial = launch.serial;
        c->block = -1;
        c->shared_vars = 0, c->dynamic_bytes = 0;
        c->shared.clear();
        memset(c->sites, 0, sizeof c->sites);
        memset(c->atomic_seq, 0, sizeof c->atomic_seq);  // (the last launch's: its sequence started again)
        if (c->locals && c->local_map) {  // (a report ended it inside a local's scope: its guard did not run)
            uintptr_t page = 4096, lo = c->local_lo & ~(page - 1), hi = (c->local_hi + page - 1) & ~(page - 1);
            madvise(c->local_map + lo, hi - lo, MADV_DONTNEED);  // (zero pages again)
        }
        c->locals = 0, c->local_lo = UINTPTR_MAX, c->local_hi = 0, c->index_past = {};
        c->local_sites.clear();
        memset(c->poll_at, 0, sizeof c->poll_at);
    }
    c->yield = yield;
    c->region = stack_pointer() & ~uintptr_t(CUFORGE_CPU_REGION - 1);
    size_t i = c->region >> REGION_SHIFT;
    if (i < REGIONS && by_region[i] != c) {
        std::lock_guard<std::mutex> hold(spare_lock);  // (against a thread that ends and clears its entry)
        by_region[i] = c;
    }
    c->jump = jump;
    if (c->held != 0 && c->held != launch.serial) c->held = 0;  // (an earlier launch's)
    if (c->held != 0 && block != c->block) settle_waw(c);  // (the last block's: its store has run)
    c->cur = cur;
    c->n = n, c->arena = arena, c->bar_gen = bar_gen, c->table = table;
    if (block != c->block) {
        if (c->fenced) {  // (the last block's fences)
            memset(c->thread_fences, 0, sizeof c->thread_fences), memset(c->fence_warp, 0, sizeof c->fence_warp);
            memset(c->fence_seq, 0, sizeof c->fence_seq);
            c->fenced = false;
        }
        c->block = block;
        c->who0 = uint32_t(block * launch.n + 1);
        c->bar0 = uint16_t(*bar_gen);
        c->fences = launch.fences[block], c->grid_syncs = launch.grid_syncs[block];
        ++c->gen;
        memset(c->warp_gen, 0, sizeof c->warp_gen);
    }
}

// An __ldg of `bytes` at `p` (cuforge/cpu_intrinsics.h), before its load: a read through the GPU's
// non-coherent cache, which is not kept coherent with the kernel's own stores. Of an element this
// launch wrote (by any thread, this one too), it may return the value from before the write,
// whatever the order of the two: reported as a race. (A write after the __ldg is not followed.)
CUFORGE_CPU_API void cuforge_check_noncoherent(const void* p, unsigned long bytes) {
    Current* c = active();
    if (!c || !bytes) return;
    uintptr_t a = reinterpret_cast<uintptr_t>(p), from, to;
    const Region* r = find_global_slow(a, &from, &to);  // (global memory: a kernel's __ldg of shared memory is its own business)
    if (!r || r->kind == OTHER || !r->shadowed || a < r->base || a + bytes > r->end) return;  // (out of bounds: its load reports it)
    size_t first = index_of(*r, a - r->base), last = index_of(*r, a + bytes - 1 - r->base);
    for (size_t i = first; i <= last; ++i) {
        Cell cell = peek(r->words[i], r->cells[i], launch.serial, c->bar0);
        if (cell.gen != launch.serial || !(cell.flags & W_SET) || !cell.w) continue;
        char mine[160], theirs[160];
        describe_thread(mine, sizeof mine, c->block, thread_of(c));
        describe_thread(theirs, sizeof theirs, (cell.w - 1) / launch.n, (cell.w - 1) % launch.n);
        report(c, __builtin_return_address(0), "data race on %s, index %zu (extent %llu): %s reads it with __ldg (through the "
               "GPU's non-coherent cache), and %s wrote it in this launch; a non-coherent read of data the kernel writes "
               "may return the value from before the write, whatever their order: read it with a plain load (not __ldg); "
               "at @LINE@", what_of(*r), i * r->granule / r->elem, (unsigned long long)((r->end - r->base) / r->elem), mine,
               theirs);
    }
}

// A __syncwarp over `warp` completed (what 2), or a grid.sync() / cluster.sync() (what 1).
// A barrier of the block (what 3) or a __syncwarp orders what each thread did before it before
// what any does after: an atomic one of them did (the poll of a flag) counts as each one's
// (released: a thread that waited at the barrier for the poller reads ordered).
CUFORGE_CPU_API void cuforge_check_sync(int what, unsigned warp) {
    Current* c = active();
    if (!c) return;
    auto acquire_together = [c](unsigned lo, unsigned hi) {
        uint32_t latest = 0;
        for (unsigned t = lo; t < hi; ++t) latest = std::max(latest, c->atomic_seq[t]);
        for (unsigned t = lo; t < hi; ++t) c->atomic_seq[t] = std::max(latest, c->atomic_seq[t]);
    };
    if (what == 2 && warp < CUFORGE_CPU_MAX_THREADS / 32) {
        ++c->warp_gen[warp];
        acquire_together(warp * 32, std::min(warp * 32 + 32, c->n));
    }
    if (what == 3 && c->atomics_since_barrier) {  // (a block that did no atomic: nothing to spread)
        acquire_together(0, c->n);
        c->atomics_since_barrier = false;
    }
    if (what == 1) launch.grid_syncs[c->block] = ++c->grid_syncs;
}

// A local variable of `bytes` at `at`, declared at `line` without an initializer, begins (its
// guard: cuforge/cpu_check.h): its bytes are undefined until written. `name` is the declaration's
// (a literal: one per declaration).
// Returns whether it is followed (then its guard tells cuforge_check_local_end when its scope ends).
CUFORGE_CPU_API int cuforge_check_local(void* at, size_t bytes, const char* name, unsigned line) {
    Current* c = active();
    if (!c) return 0;
    uintptr_t off = reinterpret_cast<uintptr_t>(at) - c->region;
    if (off >= CUFORGE_CPU_REGION || bytes > CUFORGE_CPU_REGION - off) return 0;
    if (!c->local_map) {
        void* m = mmap(nullptr, CUFORGE_CPU_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return 0;  // (then locals are not followed)
        c->local_map = static_cast<uint8_t*>(m);
    }
    unsigned site = 0;
    for (size_t k = c->local_sites.size(); k-- > 0 && !site;)
        if (c->local_sites[k].name == name && c->local_sites[k].line == line) site = unsigned(k) + 1;
    if (!site) {
        if (c->local_sites.size() >= 255) return 0;  // (a map byte names a declaration: the 256th on are not followed)
        c->local_sites.push_back({name, line});
        site = unsigned(c->local_sites.size());
    }
    memset(c->local_map + off, int(site), bytes);
    ++c->locals;
    c->local_lo = std::min(c->local_lo, off), c->local_hi = std::max(c->local_hi, off + bytes);
    return 1;
}

// That variable's scope ends.
CUFORGE_CPU_API void cuforge_check_local_end(void* at, size_t bytes) {
    Current* c = active();
    if (!c || !c->locals) return;
    uintptr_t off = reinterpret_cast<uintptr_t>(at) - c->region;
    if (off >= CUFORGE_CPU_REGION || bytes > CUFORGE_CPU_REGION - off || !c->local_map) return;
    memset(c->local_map + off, 0, bytes);
    --c->locals;
}

// A shuffle at `file`, `line` read lane `src`, whose value is undefined on a GPU: the index of its
// site, which the marked NaN it returns carries (the first of each site is kept for the report),
// plus 256 times the rerun of the launch this is (0 in its first run: see rerun_undefined).
static unsigned undefined_site(const char* name, const char* file, unsigned line, unsigned src) {
    Launch& K = launch;
    unsigned n = K.undefined_count.load(std::memory_order_acquire);
    for (unsigned i = 0; i < n; ++i)
        if (K.undefined[i].file == file && K.undefined[i].line == line) return i;
    Current* c = active();
    std::lock_guard<std::mutex> hold(K.undefined_lock);
    n = K.undefined_count.load(std::memory_order_relaxed);
    for (unsigned i = 0; i < n; ++i)
        if (K.undefined[i].file == file && K.undefined[i].line == line) return i;
    if (n == CUFORGE_CHECK_UNDEFINED_SITES) return n - 1;  // (a 64th site is reported as the 63rd)
    if (K.undefined.capacity() < CUFORGE_CHECK_UNDEFINED_SITES) return 0;  // (reserved before the launch)
    K.undefined.push_back({name, file, line, src, c ? thread_of(c) : 0, c ? c->block : 0});
    K.undefined_count.store(n + 1, std::memory_order_release);
    return n;
}
CUFORGE_CPU_API unsigned cuforge_check_undefined(const char* name, const char* file, unsigned line, unsigned src) {
    return undefined_site(name, file, line, src) | launch.rerun << 8;
}
// Whether the kernel's printf prints: not in a rerun (the first run printed).
CUFORGE_CPU_API int cuforge_check_prints() { return launch.rerun == 0; }

// The kept memory of a launch beyond this goes back after it (a launch's own is what it needs).
const size_t KEEP = size_t(64) << 20;
// The address space each array's copy is placed in the middle of (unused but for the copy: a
// reservation, no memory), and the most the copies of one launch take of it.
const size_t FAR_SLOT = size_t(256) << 30, FAR_SPACE = size_t(16) << 40;

// The shadow of `count` elements of global memory, carved from the kept pools: the offsets of
// their cells and words for now (shadow_reserve makes them pointers once the pools are large
// enough for the whole launch).
void shadow_carve(Region& r, size_t count) {
    r.cells = reinterpret_cast<Cell*>(launch.shadow.used), r.words = reinterpret_cast<Word*>(launch.words.used);
    launch.shadow.used += count * sizeof(Cell), launch.words.used += count * sizeof(Word);
}

// Grow the pools to what the launch's regions carved (fresh pages are zero: a gen of 0 is no
// launch's) and turn their offsets into cells and words. false: out of memory.
bool shadow_reserve() {
    Launch& K = launch;
    for (Launch::Pool* p : {&K.shadow, &K.words})
        if (p->used > p->bytes) {
            if (p->base) munmap(p->base, p->bytes);
            size_t bytes = (p->used + 65535) / 65536 * 65536;
            void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            p->base = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
            p->bytes = p->base ? bytes : 0;
            if (!p->base) return false;
        }
    for (Region& r : K.regions)
        if (r.shadowed) {
            r.cells = reinterpret_cast<Cell*>(K.shadow.base + reinterpret_cast<uintptr_t>(r.cells));
            r.words = reinterpret_cast<Word*>(K.words.base + reinterpret_cast<uintptr_t>(r.words));
        }
    return true;
}

// The mapping the arrays are copied into, at least `total` bytes (kept from the last launch
// where it is large enough: its pages are already there). false: out of memory.
bool mapping_reserve(size_t total) {
    Launch& K = launch;
    if (K.mapping && K.mapping_bytes >= total) return true;
    if (K.mapping) munmap(K.mapping, K.mapping_bytes);
    void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    K.mapping = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
    K.mapping_bytes = K.mapping ? total : 0;
    return K.mapping != nullptr;
}

// After a launch: what is past KEEP goes back to the system.
void release_large() {
    Launch& K = launch;
    for (Launch::Pool* p : {&K.shadow, &K.words})
        if (p->bytes > KEEP) munmap(p->base, p->bytes), *p = Launch::Pool{};
    if (K.mapping_used > KEEP) munmap(K.mapping, K.mapping_bytes), K.mapping = nullptr, K.mapping_bytes = 0, K.resident.clear();
}

// Copies of the arrays in and out, spread over the pool's workers as a launch's blocks are: one
// thread's memcpy of a large launch's arrays was a tenth of a checked saxpy on 16 cores.
struct Copy {
    char* to;
    const char* from;  // (null: zeros)
    size_t bytes;
};
inline void copy_part(const Copy& c, size_t at, size_t bytes) {
    if (c.from) memcpy(c.to + at, c.from + at, bytes);
    else memset(c.to + at, 0, bytes);
}
std::vector<Copy> copies;
const size_t PIECE = 256 * 1024;

void copy_pieces(cuforge_cpu_launch*, long long first, long long last) {
    for (long long p = first; p < last; ++p) {
        size_t at = size_t(p) * PIECE;
        for (const Copy& c : copies) {  // (piece p of the copies laid end to end)
            if (at < c.bytes) {
                copy_part(c, at, std::min(PIECE, c.bytes - at));
                break;
            }
            at -= (c.bytes + PIECE - 1) / PIECE * PIECE;
        }
    }
}

// The writes each worker's last block left held (Current::waw), once the launch is over: the
// first that wrote other bytes is the launch's report (unless another came first).
void settle_held_writes(cuforge_cpu_launch* L) {
    std::lock_guard<std::mutex> hold(spare_lock);
    for (Current* c : every) {
        if (c->held != launch.serial) continue;
        char text[sizeof L->message];
        void* pc = c->waw.pc;
        if (waw_differs(c, text, sizeof text)) record(pc, "%s", text);
    }
}

// Make `copies`, then clear them. false: stopped (Ctrl-C, the time limit), with L's status and message.
bool copy_all(cuforge_cpu_launch* L) {
    size_t pieces = 0;
    for (const Copy& c : copies) pieces += (c.bytes + PIECE - 1) / PIECE;
    if (pieces <= 4) {
        for (const Copy& c : copies) copy_part(c, 0, c.bytes);
        copies.clear();
        return true;
    }
    cuforge_cpu_launch job{};
    job.grid[0] = unsigned(pieces), job.grid[1] = job.grid[2] = 1;
    job.block[0] = 1024, job.block[1] = job.block[2] = 1;  // (the pool takes launches of 4096 threads and more)
    cuforge_cpu_run(copy_pieces, &job);
    copies.clear();
    if (!job.status) return true;
    if (!L->status) {  // (a report or a fault already set is what the launch says)
        memcpy(L->message, job.message, sizeof L->message);
        L->status = job.status;
    }
    return false;
}

// The site of a marked NaN (CUFORGE_CHECK_UNDEFINED_F32) in a float's bits, or -1.
static long site_of_f32(uint32_t b) {
    uint32_t site = b >> 16 & 63;
    if ((b & 0x7FC0FFFFu) != (CUFORGE_CHECK_UNDEFINED_F32(0) & 0x7FC0FFFFu) || site == 0) return -1;
    return long(site) - 1;
}
// The same in a double's bits (the float's mark widened, as a conversion widens it).
static long site_of_f64(uint64_t b) {
    if ((b >> 52 & 0x7FF) != 0x7FF || (b & ((1ull << 29) - 1)) != 0) return -1;
    return site_of_f32(0x7F800000u | uint32_t(b >> 29 & 0x7FFFFF));
}

// Whether `bits` of a floating-point number of `width` bytes are a NaN that went through a 16-bit
// float: CUDA's conversions to __half and __nv_bfloat16 make every NaN their one NaN, without the
// mark (a GPU's do too), so there any NaN is one, and in a float or a double that one NaN widened.
static bool narrowed_nan(uint64_t bits, unsigned width, bool bfloat16) {
    if (width == 2) return bfloat16 ? (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) : (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF);
    if (width == 4) {  // (CUDA's conversion from __half makes its NaN 0x7FFFFFFF; a plain widening, 0x7FFFE000)
        uint32_t b = uint32_t(bits) & 0x7FFFFFFFu;
        return b == 0x7FFFFFFFu || b == 0x7FFFE000u || b == 0x7FFF0000u;
    }
    uint64_t b = bits & ~(1ull << 63);
    return b == 0x7FFFFFFFE0000000ull || b == 0x7FFFFC0000000000ull || b == 0x7FFFE00000000000ull;
}

// The site of the first marked NaN in `bytes` of floating-point numbers of `width` bytes that the
// kernel wrote (`before`: what they held before), or -1; *index: its element. A NaN that went
// through a 16-bit float where there was none is taken for the launch's first site's.
static long find_mark(const char* at, const char* before, size_t bytes, unsigned width, bool bfloat16, size_t* index) {
    for (size_t i = 0; i + width <= bytes; i += width) {
        uint64_t b = 0, was = 0;
        memcpy(&b, at + i, width);
        long site = width == 4 ? site_of_f32(uint32_t(b)) : width == 8 ? site_of_f64(b) : -1;
        if (site < 0 && narrowed_nan(b, width, bfloat16) && (memcpy(&was, before + i, width), was != b)) site = 0;
        if (site >= 0) return *index = i / width, site;
    }
    return -1;
}

// The report of an undefined value of site `u` that reached `where` (an array's element, a
// conversion): a marked NaN found there, or (`marked` false) one that made the reruns' results
// differ there (rerun_undefined).
static void undefined_text(char* out, size_t size, const Launch::Undefined& u, const char* where, bool marked = true) {
    char who[160];
    describe_thread(who, sizeof who, u.block, u.thread);
    const char* how = marked ? "reached" : "decided";
    if (strncmp(u.name, "cub::", 5) == 0)  // (a CUB reduction's result outside its first thread: cub/detail/cuforge_cpu.cuh)
        snprintf(out, size, "uninitialized read: %s is defined in the first thread only (CUB's contract), and %s's%s %s "
                 "%s; use it in that thread, or broadcast it (through shared memory, after a __syncthreads()) first; at "
                 "@LINE@", u.name, who, marked ? " (here a marked NaN)" : "", how, where);
    else
        snprintf(out, size, "warp misuse: %s read lanes outside its mask or past the block's last thread (the first: %s "
                 "read lane %u of its warp), whose values are undefined on a GPU%s, and such a value %s %s; name only "
                 "lanes that call it in the mask, or discard what is read from the others; at @LINE@", u.name, who, u.src,
                 marked ? " (here marked NaNs)" : "", how, where);
}

// After the blocks: a value a shuffle read from an undefined lane that reached an array the kernel
// writes is reported, at that shuffle.
static void find_undefined(cuforge_cpu_launch* L, cuforge_check_launch* C) {
    for (int i = 0; i < C->narrays; ++i) {
        const cuforge_check_array& a = C->arrays[i];
        if (a.intent == 0 || !a.copy || (a.floating != 2 && a.floating != 4 && a.floating != 8)) continue;
        size_t index;
        long k = find_mark(reinterpret_cast<const char*>(a.copy), reinterpret_cast<const char*>(a.host), a.bytes,
                           a.floating, a.bfloat16, &index);
        if (k < 0 || size_t(k) >= launch.undefined.size()) continue;
        const Launch::Undefined& u = launch.undefined[size_t(k)];
        char where[320];
        snprintf(where, sizeof where, "%s, element %zu", a.name, index * a.floating / a.elem);
        L->status = CHECKED;
        undefined_text(L->message, sizeof L->message, u, where);
        C->file = u.file, C->line = u.line;
        return;
    }
}

// A conversion of an out-of-range floating-point number to an integer (the float-to-integer
// check's handler, below): a marked NaN is reported, at its shuffle.
__attribute__((noinline, cold)) void float_cast(const UbsanFloatCast* data, uintptr_t value) {
    Current* c = active();
    if (!c || data->from->kind != 1) return;
    long k = data->from->info == 32 ? site_of_f32(uint32_t(value)) : data->from->info == 64 ? site_of_f64(value) : -1;
    unsigned n = launch.undefined_count.load(std::memory_order_acquire);
    if (k < 0 || size_t(k) >= n) return;
    const Launch::Undefined& u = launch.undefined[size_t(k)];
    char who[160], where[320];
    describe_thread(who, sizeof who, c->block, thread_of(c));
    snprintf(where, sizeof where, "a conversion to %s by %s", data->to->name, who);
    cuforge_cpu_launch* L = launch.L;
    if (__sync_bool_compare_and_swap(&L->status, 0, CHECKED)) {
        undefined_text(L->message, sizeof L->message, u, where);
        launch.C->file = u.file, launch.C->line = u.line;
    }
    siglongjmp(*c->jump, 1);
}

// The launch's blocks run as a launch of their own to the checker: a serial of their own (the shadow's
// cells of an earlier run are then stale), the blocks' fences and grid.sync()s afresh; `rerun`: which
// rerun of the launch this is (0: its first run, see rerun_undefined).
static void run_blocks(cuforge_cpu_entry entry, cuforge_cpu_launch* L, unsigned rerun) {
    Launch& K = launch;
    unsigned long long blocks = (unsigned long long)L->grid[0] * L->grid[1] * L->grid[2];
    K.fences.assign(blocks, 0), K.grid_syncs.assign(blocks, 0);
    K.fence_seq.assign(blocks, 0), K.atomic_seq.assign(blocks, 0);
    K.serial = K.serial + 1;
    if (K.serial == 0) {  // (after 2^32 launches: the kept cells' serials would come round again)
        K.serial = 1;
        memset(K.shadow.base, 0, K.shadow.used);
    }
    if (K.words.used) copies.push_back({K.words.base, nullptr, K.words.used});  // (no access yet: cuforge/check_cell.h)
    if (!copy_all(L)) return;  // (stopped: L's status says why)
    K.seq = 0, K.rerun = rerun, K.live = K.serial;
    cuforge_cpu_run(entry, L);  // (the blocks at once, on the pool's workers; a cooperative launch's each on a thread)
    K.live = 0, K.rerun = 0;
    settle_held_writes(L);
    std::lock_guard<std::mutex> hold(spare_lock);
    for (Current* c : every)  // (the launch's runs together: the first run's instructions are kept in `unknown`)
        if (c->unknown_serial == K.serial) K.unchecked += c->unknown_count;
}

// The bytes of the launch's module variables (__device__, __constant__: the library's own, which
// the kernel may write), to run it again from them; false where they are too many to keep.
static bool keep_vars(const cuforge_check_launch* C, std::vector<std::string>& into) {
    size_t total = 0;
    for (int i = 0; i < C->nvars; ++i) total += C->vars[i].name ? C->vars[i].bytes : 0;
    if (total > KEEP) return false;
    into.assign(size_t(C->nvars), std::string());
    for (int i = 0; i < C->nvars; ++i)
        if (C->vars[i].name) into[i].assign(reinterpret_cast<const char*>(C->vars[i].address), C->vars[i].bytes);
    return true;
}
static void put_vars(const std::vector<std::string>& vars) {
    const cuforge_check_launch* C = launch.C;
    for (int i = 0; i < C->nvars && size_t(i) < vars.size(); ++i)
        if (C->vars[i].name) memcpy(reinterpret_cast<void*>(C->vars[i].address), vars[i].data(), vars[i].size());
}

// The launch run again from the caller's arrays (copied in afresh), a new launch to the checker,
// with `rerun` for the values of undefined lanes. false: it ended with a report (L's status).
static bool run_again(cuforge_cpu_entry entry, cuforge_cpu_launch* L, const std::vector<std::pair<uintptr_t, uintptr_t>>& spans,
                      const std::vector<size_t>& at, const std::vector<std::string>& vars, unsigned rerun) {
    Launch& K = launch;
    for (size_t s = 0; s < spans.size(); ++s)
        copies.push_back({K.mapping + at[s], reinterpret_cast<const char*>(spans[s].first), spans[s].second - spans[s].first});
    if (!copy_all(L)) return false;
    put_vars(vars);
    run_blocks(entry, L, rerun);
    return !L->status;
}

// A launch whose shuffles read undefined lanes (or used a CUB reduction's result outside its first
// thread), and whose outputs hold no marked NaN, may still have used such a value: through what
// drops a NaN (a comparison) or has none (an integer, a bool). So it runs twice more from the same
// arrays, those lanes holding other values (cuforge/cpu_check.h's undefined_value: two values of
// each type), and where the two runs' outputs differ, such a value decided a result: the
// launch is reported at the first such shuffle. Each run starts from the module variables the
// first one started from. Not a launch with atomics, volatile accesses or fences, whose results may
// hang on its schedule (a float's sum in the order the blocks came, a slot taken with atomicAdd),
// nor one that wrote memory the checker does not know (which a rerun would write again). A report
// in a rerun is the launch's, said to be a rerun's. The first run's results (arrays and module
// variables) are what goes back to the caller.
static void rerun_undefined(cuforge_cpu_entry entry, cuforge_cpu_launch* L, cuforge_check_launch* C,
                            const std::vector<std::pair<uintptr_t, uintptr_t>>& spans, const std::vector<size_t>& at,
                            const std::vector<int>& span_of, const std::vector<std::string>& vars_before) {
    Launch& K = launch;
    // (not where the first run wrote memory the checker does not know, which a rerun would write again)
    if (K.seq != 0 || K.unchecked_writes || vars_before.size() != size_t(C->nvars)) return;
    std::vector<bool> written(spans.size(), false);
    for (int i = 0; i < C->narrays; ++i)
        if (span_of[i] >= 0 && C->arrays[i].intent != 0) written[size_t(span_of[i])] = true;
    std::vector<std::string> first(spans.size()), one(spans.size()), vars_first;  // (the written spans' bytes after a run)
    auto keep = [&](std::vector<std::string>& into) {
        for (size_t s = 0; s < spans.size(); ++s)
            if (written[s]) into[s].assign(K.mapping + at[s], spans[s].second - spans[s].first);
    };
    auto differs = [&](const std::vector<std::string>& was) {
        for (size_t s = 0; s < spans.size(); ++s)
            if (written[s] && memcmp(was[s].data(), K.mapping + at[s], was[s].size()) != 0) return true;
        return false;
    };
    const Launch::Undefined u = K.undefined[0];
    try {
        keep(first), keep_vars(C, vars_first);
    } catch (const std::bad_alloc&) {
        return;  // (no memory to keep the first run's results: no reruns)
    }
    bool ran = run_again(entry, L, spans, at, vars_before, 1);
    try {
        if (ran) keep(one);
    } catch (const std::bad_alloc&) {
        ran = false;
    }
    if (ran) ran = run_again(entry, L, spans, at, vars_before, 2);
    if (ran && differs(one)) {
        for (int i = 0; i < C->narrays; ++i) {  // the first array element whose bytes differ
            const cuforge_check_array& a = C->arrays[i];
            if (span_of[i] < 0 || a.intent == 0) continue;
            size_t s = size_t(span_of[i]);
            const char* was = one[s].data() + (a.host - spans[s].first);
            const char* now = reinterpret_cast<const char*>(a.copy);
            size_t b = 0;
            while (b < a.bytes && was[b] == now[b]) ++b;
            if (b == a.bytes) continue;
            char where[512];
            snprintf(where, sizeof where, "%s, element %zu (two more runs of the launch, in which those values were "
                     "others, wrote different values there)", a.name, b / (a.elem ? a.elem : 1));
            L->status = CHECKED;
            undefined_text(L->message, sizeof L->message, u, where, false);
            C->pc = 0, C->file = u.file, C->line = u.line;
            break;
        }
    } else if (!ran && L->status && L->status != CUFORGE_CPU_INTERRUPTED) {  // (a report of a rerun's: said to be one)
        size_t n = strlen(L->message);
        snprintf(L->message + n, sizeof L->message - n, " (in a rerun of the launch in which the lanes that %s at %s, "
                 "line %u, read outside its mask held other values: on a GPU they are undefined)", u.name, u.file, u.line);
    }
    for (size_t s = 0; s < spans.size(); ++s)  // the first run's results
        if (written[s]) memcpy(K.mapping + at[s], first[s].data(), first[s].size());
    put_vars(vars_first);
}

// Run a launch checked: copy its arrays, run its blocks (at once, on the pool's workers; a
// cooperative launch's each on a thread), copy back what the kernel may write. 0, or -1 out of memory.
CUFORGE_CPU_API int cuforge_check_run(cuforge_cpu_entry entry, cuforge_cpu_launch* L, cuforge_check_launch* C) {
    std::lock_guard<std::mutex> hold(launching);
    Launch& K = launch;
    K.L = L, K.C = C;
    K.n = L->block[0] * L->block[1] * L->block[2];
    K.regions.clear();
    memset(cuforge_check_params, 0, sizeof cuforge_check_params);  // (this launch's arrays fill theirs)
    C->pc = 0, C->library[0] = 0, C->file = nullptr, C->line = 0, C->unchecked = 0;
    memset(C->unknown, 0, sizeof C->unknown);
    K.unchecked = 0, K.unchecked_writes = false;
    for (std::atomic<void*>& slot : K.unknown) slot = nullptr;
    K.undefined.clear(), K.undefined.reserve(CUFORGE_CHECK_UNDEFINED_SITES), K.undefined_count = 0;
    // the copies: each array (arrays that overlap: one span) apart from the others (see lay_out, below)
    const size_t page = 4096;
    std::vector<int> span_of(C->narrays, -1);
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;
    for (int i = 0; i < C->narrays; ++i) {
        cuforge_check_array& a = C->arrays[i];
        if (!a.host || !a.bytes) continue;
        uintptr_t lo = a.host, hi = a.host + a.bytes;
        int found = -1;
        for (size_t s = 0; s < spans.size(); ++s)
            if (lo < spans[s].second && spans[s].first < hi) found = int(s);
        if (found < 0) {
            spans.push_back({lo, hi});
            found = int(spans.size() - 1);
        } else {
            spans[found].first = std::min(spans[found].first, lo), spans[found].second = std::max(spans[found].second, hi);
        }
        span_of[i] = found;
    }
    for (int i = 0; i < C->narrays; ++i)  // (a later array may have merged two spans' ranges: find the widest)
        if (span_of[i] >= 0)
            for (size_t s = 0; s < spans.size(); ++s)
                if (C->arrays[i].host >= spans[s].first && C->arrays[i].host + C->arrays[i].bytes <= spans[s].second) {
                    span_of[i] = int(s);
                    break;
                }
    // Where each span's copy goes: far apart, each in the middle of a slot of unused address space
    // (FAR_SLOT), so that an index far past an array's end (a sentinel, 0xFFFFFFFF, of 16-byte
    // elements) lands in the array's own gap and not in the next array; where the system grants no
    // such reservation, with a gap as large as the span (at least 64 KiB) before and after. Each copy
    // keeps its array's address modulo a page: a view that starts off an element's alignment (an
    // offset into a larger buffer) is as misaligned in the copy.
    std::vector<size_t> at(spans.size());
    size_t total = 0, used = 0;
    std::vector<std::pair<size_t, size_t>> pages(spans.size());  // (each copy's pages: offset, bytes)
    auto lay_out = [&](bool far) {
        size_t slot = std::min(FAR_SLOT, FAR_SPACE / (spans.size() + 1)) / page * page;
        total = far ? spans.size() * slot + slot / 2 : 0, used = 0;
        for (size_t s = 0; s < spans.size(); ++s) {
            size_t bytes = spans[s].second - spans[s].first, offset = spans[s].first % page;
            size_t rounded = (offset + bytes + page - 1) / page * page;
            used += rounded;
            if (far) {
                if (rounded > slot / 2) return false;
                at[s] = s * slot + slot / 2 + offset;
            } else {
                total += (std::max<size_t>(bytes, 64 * 1024) + page - 1) / page * page;  // (the gap before it)
                at[s] = total + offset;
                total += rounded;
            }
            pages[s] = {at[s] - offset, rounded};
        }
        if (!far) total += 64 * 1024;
        K.reach = far ? slot / 2 : 64 * 1024;
        return true;
    };
    char* was = K.mapping;
    bool far = !K.far_refused && lay_out(true);
    if (far && !mapping_reserve(total)) K.far_refused = true, far = false;
    if (!far && !(lay_out(false) && mapping_reserve(total))) return -1;
    K.mapping_used = used;
    if (K.mapping == was && pages != K.resident)  // (the pages of the last launch's copies go back: the mapping is kept)
        for (const auto& r : K.resident)
            if (r.first + r.second <= K.mapping_bytes) madvise(K.mapping + r.first, r.second, MADV_DONTNEED);
    K.resident = pages;
    K.shadow.used = K.words.used = 0;
    for (size_t s = 0; s < spans.size(); ++s)
        copies.push_back({K.mapping + at[s], reinterpret_cast<const char*>(spans[s].first), spans[s].second - spans[s].first});
    if (!copy_all(L)) return 0;
    auto elem_of = [](const cuforge_check_array& a) { return a.elem && a.bytes % a.elem == 0 ? a.elem : 1u; };
    auto granule_of_array = [&](const cuforge_check_array& a) {  // (a complex's parts)
        unsigned e = elem_of(a);
        return a.floating && a.floating < e && e % a.floating == 0 ? a.floating : e;
    };
    // Arrays over one span of which one is written (an In and an Out over one buffer, overlapping
    // views): one shadow for the span, in cells of their smallest granule, so that one thread's
    // access through one name and another's through the other meet in the same cells.
    std::vector<unsigned> common(spans.size(), 0);  // the span's granule where it has a shadow of its own, else 0
    std::vector<bool> span_init(spans.size(), false);  // (what one name reads another may have been given)
    {
        std::vector<int> count(spans.size(), 0);
        std::vector<bool> written(spans.size(), false);
        for (int i = 0; i < C->narrays; ++i)
            if (span_of[i] >= 0) {
                int s = span_of[i];
                unsigned g = granule_of_array(C->arrays[i]);
                ++count[s], written[s] = written[s] || C->arrays[i].intent != 0;
                span_init[s] = span_init[s] || C->arrays[i].intent != 1;
                common[s] = common[s] ? std::min(common[s], g) : g;
            }
        for (int i = 0; i < C->narrays; ++i)
            if (span_of[i] >= 0) {
                int s = span_of[i];
                const cuforge_check_array& a = C->arrays[i];
                if (count[s] < 2 || !written[s] || granule_of_array(a) % common[s] || (a.host - spans[s].first) % common[s])
                    common[s] = 0;
            }
    }
    std::vector<Region> span_shadow(spans.size(), Region{});  // (its cells and words)
    K.names.clear();
    for (size_t s = 0; s < spans.size(); ++s)
        if (common[s]) shadow_carve(span_shadow[s], (spans[s].second - spans[s].first) / common[s]);
    for (int i = 0; i < C->narrays; ++i) {
        cuforge_check_array& a = C->arrays[i];
        if (span_of[i] < 0) {
            a.copy = a.host;
            continue;
        }
        int s = span_of[i];
        a.copy = reinterpret_cast<uintptr_t>(K.mapping + at[s]) + (a.host - spans[s].first);
        *static_cast<void**>(L->args[a.param]) = reinterpret_cast<void*>(a.copy);
        Region r{};
        r.base = a.copy, r.end = a.copy + a.bytes;
        r.elem = elem_of(a);
        r.granule = granule_of_array(a);
        r.kind = ARG, r.init = a.intent != 1, r.shadowed = a.intent != 0 || common[s], r.name = a.name;
        if (common[s]) {  // (the span's cells, from this array's first; one name for what the span's addresses find)
            r.granule = common[s];
            uintptr_t first = (a.host - spans[s].first) / common[s];  // (offsets for now: see shadow_carve)
            r.cells = reinterpret_cast<Cell*>(reinterpret_cast<uintptr_t>(span_shadow[s].cells) + first * sizeof(Cell));
            r.words = reinterpret_cast<Word*>(reinterpret_cast<uintptr_t>(span_shadow[s].words) + first * sizeof(Word));
            r.init = span_init[s];
            std::string name = a.name;
            const char* also = ", one buffer with ";
            for (int j = 0; j < C->narrays; ++j)
                if (j != i && span_of[j] == s) name += also + std::string(C->arrays[j].name), also = " and ";
            K.names.push_back(name);
            r.name = K.names.back().c_str();
        } else if (r.shadowed) {
            shadow_carve(r, a.bytes / r.granule);
        }
        K.regions.push_back(r);
    }
    for (int i = 0; i < C->nvars; ++i) {
        const cuforge_check_var& v = C->vars[i];
        Region r{};
        r.base = v.address, r.end = v.address + v.bytes, r.elem = r.granule = 1, r.kind = v.name ? VAR : OTHER, r.init = true;
        r.name = v.name;
        if (!v.name) {  // the library's other data (static locals, guard variables): cuforge's, not checked
            K.regions.push_back(r);
            continue;
        }
        r.shadowed = true;
        shadow_carve(r, v.bytes);
        K.regions.push_back(r);
    }
    if (!shadow_reserve()) return -1;
    for (int i = 0; i < C->narrays; ++i) {  // (once the cells are where they are)
        const cuforge_check_array& a = C->arrays[i];
        if (span_of[i] < 0 || a.param < 0 || a.param >= CUFORGE_CHECK_PARAMS) continue;
        for (const Region& r : K.regions)
            if (r.kind == ARG && r.base == a.copy) {
                cuforge_check_params[a.param] = indexed_param(r);
                break;
            }
    }
    std::sort(K.regions.begin(), K.regions.end(), [](const Region& a, const Region& b) { return a.base < b.base; });
    for (size_t i = 0; i < K.regions.size(); ++i) {  // the gaps between objects are split halfway; the outer ones are bounded
        Region& r = K.regions[i];
        size_t size = r.end - r.base, reach = r.kind == ARG ? std::max<size_t>(size, K.reach) : 64;
        r.lo = i == 0 ? r.base - std::min<size_t>(reach, r.base) : std::max(K.regions[i - 1].end, (K.regions[i - 1].end + r.base) / 2);
        r.lo = std::max(r.lo, r.base - std::min<size_t>(reach, r.base));
        uintptr_t next = i + 1 == K.regions.size() ? UINTPTR_MAX : K.regions[i + 1].base;  // (the gap's first half: the
        r.hi = next == UINTPTR_MAX ? r.end + reach                                           //  next object's first byte is its own)
               : next > r.end ? std::min<uintptr_t>(r.end + (next - r.end + 1) / 2, r.end + reach) : r.end;
        if (r.hi < r.end) r.hi = r.end;
        if (i && r.lo < K.regions[i - 1].hi) r.lo = K.regions[i - 1].hi;  // (overlapping objects: aliases)
        if (r.kind == ARG) {  // a copy's gaps are the mapping's own
            r.lo = std::max<uintptr_t>(r.lo, reinterpret_cast<uintptr_t>(K.mapping));
            r.hi = std::min<uintptr_t>(r.hi, reinterpret_cast<uintptr_t>(K.mapping) + K.mapping_bytes);
        }
        if (r.kind == OTHER) r.lo = r.base, r.hi = r.end;
    }
    K.slack = CUFORGE_CPU_ARENA_SLACK;  // (every worker's arena has it: an index past dynamic shared memory lands there)
    K.arena_span = CUFORGE_CPU_STATIC_SHARED + L->shared_mem + K.slack;
    std::vector<std::string> vars_before;  // (to run it again from them: rerun_undefined)
    try {
        keep_vars(C, vars_before);
    } catch (const std::bad_alloc&) {
        vars_before.clear();
    }
    run_blocks(entry, L, 0);
    if (K.undefined_count && !L->status) find_undefined(L, C);
    if (K.undefined_count && !L->status) rerun_undefined(entry, L, C, spans, at, span_of, vars_before);
    for (int i = 0; i < C->narrays; ++i) {  // what the kernel may write goes back
        cuforge_check_array& a = C->arrays[i];
        if (span_of[i] >= 0 && a.intent != 0)
            copies.push_back({reinterpret_cast<char*>(a.host), reinterpret_cast<const char*>(a.copy), size_t(a.bytes)});
        if (span_of[i] >= 0) *static_cast<void**>(L->args[a.param]) = reinterpret_cast<void*>(a.host);
    }
    copy_all(L);  // (stopped: what came back so far stays, and the status says why)
    release_large();
    Dl_info info;
    void* first = K.unknown[0].load();
    if (K.unchecked && !L->status && first && dladdr(first, &info) && info.dli_fname) {  // (the kernel's library)
        C->unchecked = K.unchecked;
        snprintf(C->library, sizeof C->library, "%s", info.dli_fname);
        for (size_t i = 0; i < 8 && K.unknown[i].load(); ++i)
            C->unknown[i] = reinterpret_cast<uintptr_t>(K.unknown[i].load()) - 1 - reinterpret_cast<uintptr_t>(info.dli_fbase);
    }
    return 0;
}

// ---------------------------------------------------------------- ThreadSanitizer's entry points
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
void __tsan_read_range(void* a, unsigned long size) {
    if (size) observe<false>(reinterpret_cast<uintptr_t>(a), unsigned(size), false, PLAIN, __builtin_return_address(0));
}
void __tsan_write_range(void* a, unsigned long size) {
    if (size) observe<false>(reinterpret_cast<uintptr_t>(a), unsigned(size), true, PLAIN, __builtin_return_address(0));
}

// An access of N bytes. Its alignment is checked where its type is known, by the compiler's
// alignment check (-fsanitize=alignment, misaligned_type): a float4 must be at a multiple of 16,
// a struct of two doubles at one of 8, though the compiler copies either with one 16-byte access
// and may call the aligned form for both.
__attribute__((always_inline)) inline void aligned(uintptr_t a, unsigned n, bool write, unsigned kind, void* pc) {
    observe<true>(a, n, write, kind, pc);
}
// A volatile load: a poll of a flag, maybe (poll), then observed.
__attribute__((noinline)) void volatile_read(uintptr_t a, unsigned n, void* pc) {
    if (Current* c = active()) poll(c, a);
    observe<true>(a, n, false, VOLATILE, pc);
}
#define CF_ACCESS(N)                                                                                                  \
    void __tsan_read##N(void* a) { aligned(reinterpret_cast<uintptr_t>(a), N, false, PLAIN, __builtin_return_address(0)); } \
    void __tsan_write##N(void* a) { aligned(reinterpret_cast<uintptr_t>(a), N, true, PLAIN, __builtin_return_address(0)); } \
    void __tsan_volatile_read##N(void* a) { volatile_read(reinterpret_cast<uintptr_t>(a), N, __builtin_return_address(0)); } \
    void __tsan_volatile_write##N(void* a) { aligned(reinterpret_cast<uintptr_t>(a), N, true, VOLATILE, __builtin_return_address(0)); }
CF_ACCESS(1)
CF_ACCESS(2)
CF_ACCESS(4)
CF_ACCESS(8)
CF_ACCESS(16)
#undef CF_ACCESS
// The compiler calls the unaligned forms where it cannot prove alignment (a packed struct, a
// cast); as for the aligned ones, the alignment a GPU needs is the type's, checked with it.
#define CF_UNALIGNED(N)                                                                                                \
    void __tsan_unaligned_read##N(void* a) { observe<true>(reinterpret_cast<uintptr_t>(a), N, false, PLAIN, __builtin_return_address(0)); } \
    void __tsan_unaligned_write##N(void* a) { observe<true>(reinterpret_cast<uintptr_t>(a), N, true, PLAIN, __builtin_return_address(0)); }
CF_UNALIGNED(2)
CF_UNALIGNED(4)
CF_UNALIGNED(8)
CF_UNALIGNED(16)
#undef CF_UNALIGNED

// The alignment check's report (-fsanitize=alignment without its runtime: check.py); the
// compiler checks the alignment inline and calls this only for a misaligned pointer. `_abort`:
// the form of a build whose checks do not recover (the launch ends at a report either way).
void __ubsan_handle_type_mismatch_v1(const UbsanTypeMismatch* data, void* a) {
    misaligned_type(data, reinterpret_cast<uintptr_t>(a), __builtin_return_address(0));
}
void __ubsan_handle_type_mismatch_v1_abort(const UbsanTypeMismatch* data, void* a) {
    misaligned_type(data, reinterpret_cast<uintptr_t>(a), __builtin_return_address(0));
}
// The bounds check's report (-fsanitize=bounds, inline as the alignment check is).
void __ubsan_handle_out_of_bounds(const UbsanOutOfBounds* data, void* index) {
    index_out_of_bounds(data, reinterpret_cast<uintptr_t>(index), __builtin_return_address(0));
}
void __ubsan_handle_out_of_bounds_abort(const UbsanOutOfBounds* data, void* index) {
    index_out_of_bounds(data, reinterpret_cast<uintptr_t>(index), __builtin_return_address(0));
}
// The float-to-integer check's report (-fsanitize=float-cast-overflow, inline as the others): a
// number outside the integer's range, NaN included, is converted. A marked NaN (a shuffle's
// undefined lane, CUFORGE_CHECK_UNDEFINED_F32) is reported there, at its shuffle; any other
// converts as the unchecked build's does (a GPU saturates where x86 gives the lowest integer).
void __ubsan_handle_float_cast_overflow(const UbsanFloatCast* data, void* value) {
    float_cast(data, reinterpret_cast<uintptr_t>(value));
}
void __ubsan_handle_float_cast_overflow_abort(const UbsanFloatCast* data, void* value) {
    float_cast(data, reinterpret_cast<uintptr_t>(value));
}
// The shift check's report (-fsanitize=shift-exponent, inline as the others).
void __ubsan_handle_shift_out_of_bounds(const UbsanShift* data, void*, void* amount) {
    shift_out_of_bounds(data, reinterpret_cast<uintptr_t>(amount), __builtin_return_address(0));
}
void __ubsan_handle_shift_out_of_bounds_abort(const UbsanShift* data, void*, void* amount) {
    shift_out_of_bounds(data, reinterpret_cast<uintptr_t>(amount), __builtin_return_address(0));
}
// fmaxf, fminf, fmax and fmin as a checked kernel library calls them (its link wraps them:
// check.py). A marked NaN among the arguments (a shuffle's undefined lane) is the result: on a GPU
// the undefined value it stands for decides the result, and the C functions, which return the
// other number, would drop the mark (a max reduction that read a lane outside its mask).
static bool marked_f32(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return site_of_f32(b) >= 0;
}
static bool marked_f64(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return site_of_f64(b) >= 0;
}
float __wrap_fmaxf(float a, float b) { return marked_f32(a) ? a : marked_f32(b) ? b : fmaxf(a, b); }
float __wrap_fminf(float a, float b) { return marked_f32(a) ? a : marked_f32(b) ? b : fminf(a, b); }
double __wrap_fmax(double a, double b) { return marked_f64(a) ? a : marked_f64(b) ? b : fmax(a, b); }
double __wrap_fmin(double a, double b) { return marked_f64(a) ? a : marked_f64(b) ? b : fmin(a, b); }

void __tsan_atomic_thread_fence(int order) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    fence_event(order == __ATOMIC_CONSUME);  // (cpu_atomic.h's mark of __threadfence_block())
}
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"

namespace {
// A fence of the kernel's code (__threadfence(), __threadfence_block(), cuda::atomic_thread_fence),
// or the one an atomic with release semantics makes before it (release_of). A fence of the
// block's scope (__threadfence_block()) orders for the threads of its block only.
void fence_event(bool block_scope) {
    Current* c = active();
    if (!c) return;
    unsigned t = thread_of(c);
    if (c->polled[t]) {  // (the volatile access before it has run by now: count_atomic)
        c->polled[t] = false;
        take_place(c, t, VOLATILE);
    }
    c->fence_seq[t] = ++launch.seq;
    if (!block_scope) launch.fences[c->block] = ++c->fences, launch.fence_seq[c->block] = c->fence_seq[t];
    ++c->thread_fences[t];
    c->fence_warp[t] = c->warp_gen[t / 32];
    c->fenced = true;
}

// An atomic that writes with a memory order that releases (release, acq_rel, seq_cst: libcu++'s
// cuda::atomic_ref and cuda::atomic, std::atomic; CUDA's atomicAdd and the like are relaxed) is a
// fence, then the atomic: what was written before it is released to whoever acquires it after.
inline void release_of(int order) {
    if (order == __ATOMIC_RELEASE || order == __ATOMIC_ACQ_REL || order == __ATOMIC_SEQ_CST) fence_event();
}
}  // namespace

extern "C" {

// The atomics themselves (done here: the instrumented code calls these instead), each seen as an
// atomic access first.
// (A weak compare-and-swap is cuforge's own update loop, cpu_atomic.h's atomic_update: a float's
// atomicAdd, atomicMax, atomicInc; a read-modify-write, not a CAS. atomicCAS is the strong one.)
#define CF_ATOMICS(N, T)                                                                                                               \
    T __tsan_atomic##N##_load(const volatile T* a, int mo) {                                                                           \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS) | scope_of(mo));                    \
        T r = __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                                                    \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    void __tsan_atomic##N##_store(volatile T* a, T v, int mo) {                                                                        \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_WRITES) | scope_of(mo));                   \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                                                      \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
    }                                                                                                                                  \
    T __tsan_atomic##N##_exchange(volatile T* a, T v, int mo) {                                                                        \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_WRITES) | scope_of(mo));                   \
        T r = __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                                             \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int mo) {                                                                       \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES) | scope_of(mo));         \
        T r = __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                                              \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int mo) {                                                                       \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES) | scope_of(mo));         \
        T r = __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                                              \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int mo) {                                                                       \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES) | scope_of(mo));         \
        T r = __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                                                              \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int mo) {                                                                        \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES) | scope_of(mo));         \
        T r = __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                                                               \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int mo) {                                                                       \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES) | scope_of(mo));         \
        T r = __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                                                              \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int mo) {                                                                      \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES) | scope_of(mo));         \
        T r = __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                                             \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int mo, int) {                                            \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES | A_CAS) | scope_of(mo)); \
        int r = __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                                       \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int mo, int) {                                              \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES) | scope_of(mo));         \
        int r = __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                                       \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return r;                                                                                                                      \
    }                                                                                                                                  \
    T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int mo, int) {                                                  \
        release_of(mo);                                                                                                                \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), N / 8, (A_READS | A_WRITES | A_CAS) | scope_of(mo)); \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                                              \
        atomic_done(scope_of(mo), reinterpret_cast<uintptr_t>(a));                                                                     \
        return c;                                                                                                                      \
    }
CF_ATOMICS(8, char)
CF_ATOMICS(16, short)
CF_ATOMICS(32, int)
CF_ATOMICS(64, long)
#undef CF_ATOMICS

// 16-byte atomics under a lock (no cmpxchg16b without -mcx16 here).
#define CF_WIDE(OP, EXPR, KIND)                                                                                       \
    __int128 __tsan_atomic128_##OP(volatile __int128* a, __int128 v, int) {                                          \
        atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), 16, KIND);                         \
        std::lock_guard<std::mutex> hold(wide);                                                                       \
        __int128 old = *a;                                                                                            \
        *a = EXPR;                                                                                                    \
        return old;                                                                                                   \
    }
CF_WIDE(exchange, v, A_WRITES)
CF_WIDE(fetch_add, old + v, A_READS | A_WRITES)
CF_WIDE(fetch_sub, old - v, A_READS | A_WRITES)
CF_WIDE(fetch_and, old & v, A_READS | A_WRITES)
CF_WIDE(fetch_or, old | v, A_READS | A_WRITES)
CF_WIDE(fetch_xor, old ^ v, A_READS | A_WRITES)
CF_WIDE(fetch_nand, ~(old & v), A_READS | A_WRITES)
#undef CF_WIDE
__int128 __tsan_atomic128_load(const volatile __int128* a, int) {
    atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), 16, A_READS);
    std::lock_guard<std::mutex> hold(wide);
    return *a;
}
void __tsan_atomic128_store(volatile __int128* a, __int128 v, int) {
    atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), 16, A_WRITES);
    std::lock_guard<std::mutex> hold(wide);
    *a = v;
}
int __tsan_atomic128_compare_exchange_strong(volatile __int128* a, __int128* c, __int128 v, int, int) {
    atomic_event(__builtin_return_address(0), reinterpret_cast<uintptr_t>(a), 16, A_READS | A_WRITES | A_CAS);
    std::lock_guard<std::mutex> hold(wide);
    if (*a == *c) {
        *a = v;
        return 1;
    }
    *c = *a;
    return 0;
}
int __tsan_atomic128_compare_exchange_weak(volatile __int128* a, __int128* c, __int128 v, int m, int f) {
    return __tsan_atomic128_compare_exchange_strong(a, c, v, m, f);
}
__int128 __tsan_atomic128_compare_exchange_val(volatile __int128* a, __int128 c, __int128 v, int m, int f) {
    __tsan_atomic128_compare_exchange_strong(a, &c, v, m, f);
    return c;
}

}  // extern "C"
