// cuforge's CPU runtime library: the pool of worker threads that runs a launch's blocks, each
// thread's fiber stacks and shared-memory arena, the guard that turns a fault in kernel code
// into an error instead of a dead process, and the watchdog that stops a launch on SIGINT or
// past its time limit. Compiled once per compiler (cuforge/_cpu/runtime.py)
// and loaded RTLD_GLOBAL before any kernel library, which calls these functions.
#include "cuforge_cpu_abi.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
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
#include <semaphore.h>
#include <sys/mman.h>
#include <time.h>
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

// ---------------------------------------------------------------- runners: the threads that run launches
// Kernel code may never return (a loop whose exit never comes), so a launch is stopped from
// outside: the watchdog (below) sets its status and sends STOP_SIGNAL to every thread running its
// blocks, whose handler jumps back through the fault guard. A Runner is such a thread as the
// watchdog sees it: records are reused, never freed, so that the watchdog may read any of them.
struct Runner {
    std::atomic<cuforge_cpu_launch*> launch{nullptr};  // the launch whose blocks it runs now
    std::atomic<unsigned long long> call{0};    // a caller's launches, counted (their start, to the watchdog)
    std::atomic<unsigned long long> epoch{0};   // the SIGINTs counted when its launch began
    std::atomic<int> busy{0};                   // the watchdog is at its launch: the caller waits to return
    std::atomic<bool> signalled{false};         // a stop signal sent, not handled yet (they queue: one at a time)
    bool caller = false;                        // a thread that calls cuforge_cpu_run (not a worker)
    bool used = false;
    pthread_t thread;
    Runner* next = nullptr;
    unsigned long long seen_call = 0;  // the watchdog's: the call it last saw, and since when
    long long seen_at = 0;
};
std::mutex* runners_lock = new std::mutex;  // (a pointer: a fork's child makes a new one)
Runner* runners = nullptr;
thread_local Runner* my_runner = nullptr;
thread_local volatile sig_atomic_t in_runtime = 0;  // in a runtime call that holds locks: not stopped there

struct RunnerSlot {  // gives the thread's record back when the thread ends
    ~RunnerSlot() {
        if (!my_runner) return;
        std::lock_guard<std::mutex> hold(*runners_lock);
        my_runner->launch.store(nullptr);
        my_runner->used = false;
    }
};
thread_local RunnerSlot runner_slot;

Runner* runner(bool caller) {
    if (Runner* r = my_runner) return r;
    (void)&runner_slot;  // (its destructor is registered with the thread's first use)
    std::lock_guard<std::mutex> hold(*runners_lock);
    Runner* r = runners;
    while (r && r->used) r = r->next;
    if (!r) {
        r = new Runner;
        r->next = runners;
        runners = r;
    }
    r->used = true, r->caller = caller, r->thread = pthread_self();
    r->launch.store(nullptr), r->call.store(0), r->signalled.store(false), r->seen_call = 0;
    return my_runner = r;
}

// STOP_SIGNAL: back to the guard's frame if this thread runs kernel code of a stopped launch. Where
// it cannot be left now (a runtime call: printf, grid.sync) the call ends the launch when it
// returns, or the watchdog sends the signal again.
void on_stop(int sig, siginfo_t*, void*) {
    Runner* r = my_runner;
    if (!r) return;
    r->signalled.store(false);
    cuforge_cpu_launch* L = r->launch.load(std::memory_order_relaxed);
    sigjmp_buf* jump = guard_jump;
    if (!L || !L->status || !jump || in_runtime) return;
    guard_jump = nullptr;
    if (guard_signal) *guard_signal = sig;  // (the status is set: the guard adds no fault message)
    siglongjmp(*jump, 1);
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
        Runner* me = runner(false);
        unsigned long long seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> hold(lock);
                work.wait(hold, [&] { return job != seen; });
                seen = job;
                me->launch.store(L);
            }
            run_share();
            me->launch.store(nullptr);
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
    Group* next_active = nullptr;  // the groups under way (under runners_lock), which the watchdog wakes
};
Group* active_groups = nullptr;
thread_local Group* my_group = nullptr;
thread_local unsigned my_rank = 0;

// Run blocks `ranks` (linear block indices) of a launch at once, each on its own thread.
void run_group(cuforge_cpu_entry entry, cuforge_cpu_launch* L, const std::vector<long long>& blocks) {
    Group g;
    g.size = unsigned(blocks.size());
    g.arenas.assign(blocks.size(), nullptr);
    g.L = L;
    {
        std::lock_guard<std::mutex> hold(*runners_lock);
        g.next_active = active_groups;
        active_groups = &g;
    }
    unsigned long long arena = CUFORGE_CPU_STATIC_SHARED + L->shared_mem;  // as prepare() in cuforge_cpu.h asks
    std::vector<std::thread> threads;
    unsigned ready = 0;
    for (unsigned r = 0; r < g.size; ++r)
        threads.emplace_back([&, r] {
            my_group = &g, my_rank = r;
            Runner* me = runner(false);
            me->launch.store(L);
            char* mine = cuforge_cpu_arena(arena);
            {
                std::unique_lock<std::mutex> hold(g.lock);
                g.arenas[r] = mine;
                if (++ready == g.size) g.changed.notify_all();
                g.changed.wait(hold, [&] { return ready == g.size; });  // every arena known before any block runs
            }
            entry(L, blocks[r], blocks[r] + 1);
            cuforge_cpu_group_exit();
            me->launch.store(nullptr);
            my_group = nullptr;
        });
    for (auto& t : threads) t.join();
    std::lock_guard<std::mutex> hold(*runners_lock);
    Group** at = &active_groups;
    while (*at != &g) at = &(*at)->next_active;
    *at = g.next_active;
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

// ---------------------------------------------------------------- the watchdog: SIGINT and the time limit
// One thread, started by the first launch, looks at the running launches every TICK while there
// are any (and sleeps when there have been none for a second): a launch that began before a
// SIGINT, or that has run past the limit, is stopped (its status set) and its threads are sent
// STOP_SIGNAL, again each tick until they are out. A launch costs it two stores and a load.
//
// The SIGINT handler chains to the one it replaced (Python's: it sets the flag on which the
// interpreter raises KeyboardInterrupt), then only counts the signal and wakes the watchdog, as a
// handler may do no more. Outside launches Python's handling is thus unchanged; where Python (or
// anyone) installs another handler, the watchdog puts this one back in front of it at the next
// launch that runs for a tick. An ignored SIGINT, or the default (which ends the process), is left
// as it is.
// (A stopped launch's threads are sent the signal every STOPPING_NS until they are out: one that
// came while a thread was in a runtime call was let pass.)
const long long TICK_NS = 20 * 1000 * 1000, STOPPING_NS = 1000 * 1000, IDLE_NS = 1000 * 1000 * 1000;
sem_t wake;
std::atomic<bool> watching{false}, sleeping{false};
std::atomic<unsigned long long> interrupts{0};  // SIGINTs, counted
std::atomic<long long> limit_ns{0};
struct sigaction sigint_previous[2];  // the one in use is sigint_previous[sigint_slot]
std::atomic<int> sigint_slot{0};
int STOP_SIGNAL = 0;

long long now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

void on_interrupt(int sig, siginfo_t* info, void* context) {
    const struct sigaction& p = sigint_previous[sigint_slot.load()];
    int saved = errno;
    if (p.sa_flags & SA_SIGINFO)
        p.sa_sigaction(sig, info, context);
    else if (p.sa_handler != SIG_IGN && p.sa_handler != SIG_DFL)  // (neither is ever replaced: a safeguard)
        p.sa_handler(sig);
    interrupts.fetch_add(1);
    sem_post(&wake);
    errno = saved;
}

void ensure_sigint() {
    struct sigaction now;
    if (sigaction(SIGINT, nullptr, &now) != 0) return;
    if ((now.sa_flags & SA_SIGINFO) ? now.sa_sigaction == on_interrupt : now.sa_handler == SIG_IGN || now.sa_handler == SIG_DFL)
        return;
    int slot = sigint_slot.load() ^ 1;  // (a handler running now reads the other)
    sigint_previous[slot] = now;
    sigint_slot.store(slot);
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_interrupt;
    mine.sa_flags = SA_SIGINFO | (now.sa_flags & (SA_ONSTACK | SA_RESTART));  // as the replaced one: EINTR or not
    mine.sa_mask = now.sa_mask;
    sigaddset(&mine.sa_mask, STOP_SIGNAL);  // a stop's jump must not leave this handler half run, SIGINT blocked
    sigaction(SIGINT, &mine, nullptr);
}

// Send a stopped launch's threads the signal, and wake its groups' waits (under runners_lock).
void send_stop(cuforge_cpu_launch* L) {
    if (L->status != CUFORGE_CPU_INTERRUPTED && L->status != CUFORGE_CPU_TIMED_OUT) return;  // (ended otherwise first)
    for (Runner* r = runners; r; r = r->next)
        if (r->used && r->launch.load() == L && !r->signalled.exchange(true))
            pthread_kill(r->thread, STOP_SIGNAL);  // (alive: it gives its record back under the lock)
    for (Group* g = active_groups; g; g = g->next_active)
        if (g->L == L) {
            std::lock_guard<std::mutex> hold(g->lock);
            g->changed.notify_all();
        }
}

void stop(cuforge_cpu_launch* L, int status, long long limit) {
    if (__sync_bool_compare_and_swap(&L->status, 0, status)) {
        if (status == CUFORGE_CPU_TIMED_OUT)
            snprintf(L->message, sizeof L->message, "the launch ran longer than its time limit of %g s and was stopped",
                     limit / 1e9);
        else
            snprintf(L->message, sizeof L->message, "the launch was interrupted (SIGINT) and stopped");
    }
    send_stop(L);
}

// One look at the running launches: whether there were any, and whether one stopped is not out yet.
bool scan(long long now, bool* stopping) {
    bool active = false, running = false;
    unsigned long long signals = interrupts.load();
    long long limit = limit_ns.load();
    {
        std::lock_guard<std::mutex> hold(*runners_lock);
        for (Runner* r = runners; r; r = r->next) {
            if (!r->used || !r->caller) continue;
            r->busy.store(1);  // (before the launch is read: its caller waits for this to return)
            if (cuforge_cpu_launch* L = r->launch.load()) {
                active = true;
                unsigned long long call = r->call.load();
                if (call != r->seen_call) r->seen_call = call, r->seen_at = now;
                else running = true;
                if (r->epoch.load() != signals) stop(L, CUFORGE_CPU_INTERRUPTED, limit);
                else if (limit > 0 && now - r->seen_at >= limit) stop(L, CUFORGE_CPU_TIMED_OUT, limit);
                else send_stop(L);  // (stopped at an earlier tick: its threads not all out yet)
                *stopping = *stopping || L->status == CUFORGE_CPU_INTERRUPTED || L->status == CUFORGE_CPU_TIMED_OUT;
            }
            r->busy.store(0);
        }
    }
    if (running) ensure_sigint();
    return active;
}

void watch() {
    long long busy_at = now_ns();
    bool stopping = false;
    for (;;) {
        timespec until;
        clock_gettime(CLOCK_REALTIME, &until);  // (sem_timedwait's clock; the times compared are monotonic)
        long long ns = until.tv_nsec + (stopping ? STOPPING_NS : TICK_NS);
        until.tv_sec += ns / 1000000000LL, until.tv_nsec = ns % 1000000000LL;
        while (sem_timedwait(&wake, &until) != 0 && errno == EINTR) {}
        long long now = now_ns();
        stopping = false;
        if (scan(now, &stopping)) {
            busy_at = now;
        } else if (now - busy_at > IDLE_NS) {
            sleeping.store(true);  // (before the look: a launch that starts after it sees the flag)
            if (!scan(now, &stopping))
                while (sem_wait(&wake) != 0 && errno == EINTR) {}
            sleeping.store(false);
            busy_at = now_ns();
        }
    }
}

void start_watchdog() {
    static bool hooked = false;
    std::lock_guard<std::mutex> hold(*runners_lock);
    if (watching.load()) return;
    if (!hooked) {  // threads do not survive fork: the child starts its own watchdog
        hooked = true;
        pthread_atfork(nullptr, nullptr, [] {
            runners_lock = new std::mutex;
            for (Runner* r = runners; r; r = r->next) {
                r->busy.store(0);  // (the watchdog was at it)
                if (r != my_runner) r->used = false, r->launch.store(nullptr);
            }
            active_groups = nullptr;
            watching.store(false), sleeping.store(false);
        });
    }
    sem_init(&wake, 0, 0);
    STOP_SIGNAL = SIGRTMAX - 6;
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_stop;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;  // (the jump keeps the signal mask)
    sigemptyset(&mine.sa_mask);
    sigaction(STOP_SIGNAL, &mine, nullptr);
    ensure_sigint();
    std::thread(watch).detach();
    watching.store(true);
}

// A launch as the watchdog sees it, from cuforge_cpu_run's start to its return.
struct Watched {
    Runner* me;
    explicit Watched(cuforge_cpu_launch* L) : me(runner(true)) {
        if (!watching.load(std::memory_order_relaxed)) start_watchdog();
        me->epoch.store(interrupts.load(std::memory_order_relaxed), std::memory_order_relaxed);
        me->call.store(me->call.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        me->launch.store(L);
        if (sleeping.load()) sem_post(&wake);
    }
    ~Watched() {
        me->launch.store(nullptr);
        while (me->busy.load()) sched_yield();  // the watchdog may be at this launch, which the caller frees
    }
};

}  // namespace

extern "C" {

void cuforge_cpu_guard(sigjmp_buf* jump, volatile int* sig, void* volatile* address) {
    // A signal may come between any two of these (a stop is sent at any time): the jump is set
    // last and cleared first, so that a handler that sees it sees where to write.
    guard_jump = nullptr;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    guard_signal = sig;
    guard_address = address;
    std::atomic_signal_fence(std::memory_order_seq_cst);
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
    bytes += CUFORGE_CPU_ARENA_SLACK;
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

static int group_sync(cuforge_cpu_launch* L, char* why, unsigned long long size);
int cuforge_cpu_group_sync(cuforge_cpu_launch* L, char* why, unsigned long long size) {
    in_runtime = 1;  // (its locks and waits are not left by a jump: a stop wakes the wait instead)
    std::atomic_signal_fence(std::memory_order_seq_cst);
    int failed = group_sync(L, why, size);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    in_runtime = 0;
    return failed;
}

static int group_sync(cuforge_cpu_launch* L, char* why, unsigned long long size) {
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

int cuforge_cpu_vprintf(const char* format, va_list args) {
    in_runtime = 1;  // (a stop inside would leave stdout's lock taken)
    std::atomic_signal_fence(std::memory_order_seq_cst);
    int n = vprintf(format, args);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    in_runtime = 0;
    cuforge_cpu_launch* L = my_runner ? my_runner->launch.load(std::memory_order_relaxed) : nullptr;
    sigjmp_buf* jump = guard_jump;
    if (L && (L->status == CUFORGE_CPU_INTERRUPTED || L->status == CUFORGE_CPU_TIMED_OUT) && jump) {
        guard_jump = nullptr;
        siglongjmp(*jump, 1);  // stopped meanwhile: out now, as the signal would have
    }
    return n;
}

void cuforge_cpu_set_timeout(double seconds) {
    limit_ns.store(seconds > 0 ? (long long)(seconds * 1e9) : 0);
}

void cuforge_cpu_run(cuforge_cpu_entry entry, cuforge_cpu_launch* L) {
    ensure_handlers();
    Watched watched(L);
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

