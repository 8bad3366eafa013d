// cuforge's CPU runtime library: the pool of worker threads that runs a launch's blocks, each
// thread's fiber stacks and shared-memory arena, and the guard that turns a fault in kernel code
// into an error instead of a dead process. Compiled once per compiler (cuforge/_cpu/runtime.py)
// and loaded RTLD_GLOBAL before any kernel library, which calls these functions.
#include "cuforge_cpu_abi.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {

// ---------------------------------------------------------------- per-thread memory
struct ThreadMemory {
    char* stacks = nullptr;
    size_t stack_bytes = 0;
    unsigned guarded = 0;  // stacks [0, guarded) have their guard page
    char* arena = nullptr;
    unsigned long long arena_bytes = 0;
    char* alt = nullptr;  // the signal stack: a fault on a fiber's guard page needs one
    ~ThreadMemory() {
        if (stacks) munmap(stacks, stack_bytes);
        free(arena);
    }
};
thread_local ThreadMemory memory;

void ensure_alt_stack() {
    if (memory.alt) return;
    stack_t old;
    if (sigaltstack(nullptr, &old) == 0 && !(old.ss_flags & SS_DISABLE)) {  // the thread has one (faulthandler's)
        memory.alt = static_cast<char*>(old.ss_sp);
        return;
    }
    size_t size = 64 * 1024;
    memory.alt = static_cast<char*>(malloc(size));
    stack_t st;
    st.ss_sp = memory.alt;
    st.ss_size = size;
    st.ss_flags = 0;
    sigaltstack(&st, nullptr);
}

// ---------------------------------------------------------------- the fault guard
thread_local sigjmp_buf* guard_jump;
thread_local volatile int* guard_signal;
thread_local void* volatile* guard_address;
const int SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE};
struct sigaction previous[3];
std::mutex handler_lock;

int slot(int sig) { return sig == SIGSEGV ? 0 : sig == SIGBUS ? 1 : 2; }

void on_fault(int sig, siginfo_t* info, void* context) {
    if (sigjmp_buf* jump = guard_jump) {  // kernel code on this thread: back to its entry
        guard_jump = nullptr;
        // x86-64's general-protection fault comes as a SIGSEGV with no address (SI_KERNEL): told
        // apart (as -SIGSEGV), since it is no access to unowned memory (see cuforge_cpu.h run_range)
        *guard_signal = sig == SIGSEGV && info->si_code == SI_KERNEL ? -SIGSEGV : sig;
        *guard_address = info->si_addr;
        siglongjmp(*jump, 1);
    }
    // Not a kernel's fault: whoever handled it before (Python's faulthandler, the default) does.
    const struct sigaction& p = previous[slot(sig)];
    if ((p.sa_flags & SA_SIGINFO) && p.sa_sigaction) {
        p.sa_sigaction(sig, info, context);
    } else if (p.sa_handler == SIG_IGN) {
        return;
    } else if (p.sa_handler != SIG_DFL && p.sa_handler) {
        p.sa_handler(sig);
    } else {
        signal(sig, SIG_DFL);  // the faulting instruction runs again and the default action ends the process
    }
}

// Installed at each launch unless still in place: a handler installed later (faulthandler.enable())
// becomes the one that non-kernel faults are handed to.
void ensure_handlers() {
    struct sigaction now;
    sigaction(SIGSEGV, nullptr, &now);  // one look per launch: the three are installed together
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault) return;
    std::lock_guard<std::mutex> hold(handler_lock);
    for (int sig : SIGNALS) {
        sigaction(sig, nullptr, &now);
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault) continue;
        struct sigaction mine;
        memset(&mine, 0, sizeof mine);
        mine.sa_sigaction = on_fault;
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&mine.sa_mask);
        sigaction(sig, &mine, &previous[slot(sig)]);
    }
}

// ---------------------------------------------------------------- the pool
struct Pool {
    std::mutex lock;
    std::condition_variable work, done;
    std::mutex launching;  // one launch at a time spreads over the workers; another runs on its own thread
    int workers = 0;       // threads besides the caller
    unsigned long long job = 0;
    int busy = 0;
    cuforge_cpu_entry entry = nullptr;
    cuforge_cpu_launch* L = nullptr;
    long long blocks = 0, chunk = 1;
    std::atomic<long long> next{0};

    void run_share() {
        for (;;) {
            if (L->status) return;
            long long b = next.fetch_add(chunk, std::memory_order_relaxed);
            if (b >= blocks) return;
            entry(L, b, std::min(b + chunk, blocks));
        }
    }
    void serve() {
        ensure_alt_stack();
        unsigned long long seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> hold(lock);
                work.wait(hold, [&] { return job != seen; });
                seen = job;
            }
            run_share();
            std::lock_guard<std::mutex> hold(lock);
            if (--busy == 0) done.notify_all();
        }
    }
};

// ---------------------------------------------------------------- groups (cooperative, clusters)
struct Group {
    std::mutex lock;
    std::condition_variable changed;
    unsigned size = 0;           // blocks in the group
    unsigned arrived = 0, generation = 0, exited = 0;
    long long first_exited = -1;  // the rank of a block that ended while others may wait
    std::vector<char*> arenas;   // each block's shared memory, by its rank in the group
    cuforge_cpu_launch* L = nullptr;
};
thread_local Group* my_group = nullptr;
thread_local unsigned my_rank = 0;

// Run blocks `ranks` (linear block indices) of a launch at once, each on its own thread.
void run_group(cuforge_cpu_entry entry, cuforge_cpu_launch* L, const std::vector<long long>& blocks) {
    Group g;
    g.size = unsigned(blocks.size());
    g.arenas.assign(blocks.size(), nullptr);
    g.L = L;
    unsigned long long arena = CUFORGE_CPU_STATIC_SHARED + L->shared_mem;  // as prepare() in cuforge_cpu.h asks
    std::vector<std::thread> threads;
    unsigned ready = 0;
    for (unsigned r = 0; r < g.size; ++r)
        threads.emplace_back([&, r] {
            my_group = &g, my_rank = r;
            char* mine = cuforge_cpu_arena(arena);
            {
                std::unique_lock<std::mutex> hold(g.lock);
                g.arenas[r] = mine;
                if (++ready == g.size) g.changed.notify_all();
                g.changed.wait(hold, [&] { return ready == g.size; });  // every arena known before any block runs
            }
            entry(L, blocks[r], blocks[r] + 1);
            cuforge_cpu_group_exit();
            my_group = nullptr;
        });
    for (auto& t : threads) t.join();
}

Pool* pool = nullptr;  // never deleted: its threads may still wait on it at exit
int wanted_threads = 0;
std::once_flag fork_hook;

int cores() {
    if (const char* env = getenv("CUFORGE_CPU_THREADS")) {
        int n = atoi(env);
        if (n > 0) return n;
    }
    unsigned n = std::thread::hardware_concurrency();
    return n ? int(n) : 1;
}

Pool* the_pool() {
    std::call_once(fork_hook, [] { pthread_atfork(nullptr, nullptr, [] { pool = nullptr; }); });  // threads do not survive fork
    if (!pool) {
        Pool* p = new Pool;
        p->workers = (wanted_threads > 0 ? wanted_threads : cores()) - 1;
        for (int i = 0; i < p->workers; ++i) std::thread([p] { p->serve(); }).detach();
        pool = p;
    }
    return pool;
}

}  // namespace

extern "C" {

void cuforge_cpu_guard(sigjmp_buf* jump, volatile int* sig, void* volatile* address) {
    guard_signal = sig;
    guard_address = address;
    guard_jump = jump;
}

char* cuforge_cpu_stacks(unsigned fibers) {
    static_assert(CUFORGE_CPU_HEADER + (CUFORGE_CPU_MAX_THREADS + 1ull) * CUFORGE_CPU_STACK_STRIDE <= CUFORGE_CPU_REGION,
                  "a region holds its header and its stacks");
    if (!memory.stacks) {  // map twice the region and keep the aligned part (the rest is unmapped)
        size_t size = CUFORGE_CPU_REGION;
        void* m = mmap(nullptr, 2 * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return nullptr;
        uintptr_t start = reinterpret_cast<uintptr_t>(m), aligned = (start + size - 1) & ~uintptr_t(size - 1);
        if (aligned > start) munmap(m, aligned - start);
        if (start + 2 * size > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), start + 2 * size - aligned - size);
        memory.stacks = reinterpret_cast<char*>(aligned);
        memory.stack_bytes = size;
        mprotect(memory.stacks + CUFORGE_CPU_HEADER + size_t(CUFORGE_CPU_MAX_THREADS) * CUFORGE_CPU_STACK_STRIDE,
                 CUFORGE_CPU_GUARD, PROT_NONE);  // the plain loop's guard page
    }
    for (; memory.guarded < fibers && memory.guarded < CUFORGE_CPU_MAX_THREADS; ++memory.guarded)
        mprotect(memory.stacks + CUFORGE_CPU_HEADER + size_t(memory.guarded) * CUFORGE_CPU_STACK_STRIDE, CUFORGE_CPU_GUARD,
                 PROT_NONE);
    ensure_alt_stack();
    return memory.stacks;
}

char* cuforge_cpu_arena(unsigned long long bytes) {
    if (memory.arena_bytes < bytes) {
        free(memory.arena);
        unsigned long long size = (bytes + 1023) / 1024 * 1024;
        memory.arena = static_cast<char*>(aligned_alloc(1024, size));
        memory.arena_bytes = memory.arena ? size : 0;
    }
    return memory.arena;
}

int cuforge_cpu_threads(int wanted) {
    if (wanted > 0 && !pool) wanted_threads = wanted;
    return pool ? pool->workers + 1 : (wanted_threads > 0 ? wanted_threads : cores());
}

int cuforge_cpu_group_sync(cuforge_cpu_launch* L, char* why, unsigned long long size) {
    Group* g = my_group;
    if (!g) {
        snprintf(why, size, "grid.sync() and cluster.sync() need a cooperative or clustered launch");
        return 1;
    }
    std::unique_lock<std::mutex> hold(g->lock);
    unsigned gen = g->generation;
    if (++g->arrived == g->size) {
        g->arrived = 0;
        ++g->generation;
        g->changed.notify_all();
        return 0;
    }
    g->changed.wait(hold, [&] { return g->generation != gen || g->exited || L->status; });
    if (g->generation != gen) return 0;
    if (g->exited)
        snprintf(why, size, "block %lld of the %s exited without reaching the sync that the others wait at; every block "
                 "must reach each grid.sync() (cluster.sync())", g->first_exited, L->cluster[0] > 0 ? "cluster" : "grid");
    else
        snprintf(why, size, "another block of the group failed");
    return 1;
}

// The size in bytes of the data symbol at `address` (a module variable), 0 if unknown.
unsigned long long cuforge_cpu_symbol_size(void* address) {
    Dl_info info;
    void* found = nullptr;
    if (!dladdr1(address, &info, &found, RTLD_DL_SYMENT) || !found) return 0;
    return static_cast<const ElfW(Sym)*>(found)->st_size;
}

char* cuforge_cpu_group_arena(unsigned rank) {
    Group* g = my_group;
    return g && rank < g->size ? g->arenas[rank] : nullptr;
}

void cuforge_cpu_group_exit(void) {
    Group* g = my_group;
    if (!g) return;
    std::lock_guard<std::mutex> hold(g->lock);
    if (!g->exited++) g->first_exited = my_rank;
    g->changed.notify_all();
}

void cuforge_cpu_run(cuforge_cpu_entry entry, cuforge_cpu_launch* L) {
    ensure_handlers();
    long long blocks = (long long)L->grid[0] * L->grid[1] * L->grid[2];
    if (L->cooperative) {  // the grid at once, or each cluster at once, one after the other
        int cx = L->cluster[0] > 0 ? L->cluster[0] : 0, cy = L->cluster[1] > 0 ? L->cluster[1] : 1,
            cz = L->cluster[2] > 0 ? L->cluster[2] : 1;
        std::vector<long long> group;
        if (!cx) {
            for (long long b = 0; b < blocks; ++b) group.push_back(b);
            run_group(entry, L, group);
        } else {
            unsigned gx = L->grid[0], gy = L->grid[1], gz = L->grid[2];
            for (unsigned z0 = 0; z0 < gz && !L->status; z0 += cz)
                for (unsigned y0 = 0; y0 < gy && !L->status; y0 += cy)
                    for (unsigned x0 = 0; x0 < gx && !L->status; x0 += cx) {
                        group.clear();  // ranked as cluster.block_rank() counts: x fastest
                        for (int z = 0; z < cz; ++z)
                            for (int y = 0; y < cy; ++y)
                                for (int x = 0; x < cx; ++x)
                                    group.push_back((long long)(x0 + x) + gx * ((long long)(y0 + y) + gy * (z0 + z)));
                        run_group(entry, L, group);
                    }
        }
        fflush(stdout);
        return;
    }
    long long threads = (long long)L->block[0] * L->block[1] * L->block[2];
    // Small launches, cooperative ones (every block on one worker, so that all are alive at once)
    // and a launch while another has the pool run on the calling thread.
    Pool* p = blocks > 1 && !L->cooperative && blocks * threads >= 4096 ? the_pool() : nullptr;
    if (!p || p->workers == 0 || !p->launching.try_lock()) {
        entry(L, 0, blocks);
    } else {
        {
            std::lock_guard<std::mutex> hold(p->lock);
            p->entry = entry, p->L = L, p->blocks = blocks;
            p->chunk = std::max(1LL, blocks / (8LL * (p->workers + 1)));
            p->next.store(0);
            p->busy = p->workers;
            ++p->job;
        }
        p->work.notify_all();
        p->run_share();
        {
            std::unique_lock<std::mutex> hold(p->lock);
            p->done.wait(hold, [&] { return p->busy == 0; });
        }
        p->launching.unlock();
    }
    fflush(stdout);  // printf from the kernel shows before Python's next output
}

}  // extern "C"
