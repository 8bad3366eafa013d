// cuforge/cpu_check.h: the kernel side of a checked launch (cuforge/_cpu/check.cpp is the other).
//
// A checked kernel library is its kernels' source compiled with ThreadSanitizer's instrumentation
// (every memory access calls the checker first) and with this header after cuforge_cpu.h. Here:
// each CUDA thread tells the checker who it is before its body runs (the block, the thread, the
// block's shared memory, the worker's barrier generation), and the __shared__ declarations
// register where they are, with their element size and name, with unused bytes between them so
// that an index past one lands in its own gap. Nothing here is instrumented: it is cuforge's own
// bookkeeping, not the kernel's accesses.
#pragma once
#include <type_traits>

#define CF_NOCHECK __attribute__((no_sanitize_thread, no_sanitize("alignment", "bounds"), noinline))

extern "C" {
CUFORGE_CPU_API unsigned cuforge_check_undefined(const char* name, const char* file, unsigned line, unsigned src);
CUFORGE_CPU_API int cuforge_check_local(void* at, size_t bytes, const char* name, unsigned line);
CUFORGE_CPU_API void cuforge_check_local_end(void* at, size_t bytes);
CUFORGE_CPU_API void cuforge_check_thread(sigjmp_buf* jump, long long block, const unsigned* cur, unsigned n, char* arena,
                                          const unsigned* bar_gen, cuforge_check_shared* table, void (*yield)());
}

// The C library's memset, memcpy and memmove as the kernel's code calls them: a checked build keeps
// them calls (-fno-builtin-memset, ...: check.py), which these definitions, hidden in the kernel's
// library, take. Each tells the checker of the bytes it writes and reads, as ThreadSanitizer's
// runtime does by intercepting them, then makes the copy itself (no call into the C library:
// a memset there would be this one again). So shared memory that one thread zeroes with memset
// is written for the checker, and a memset past an array's end is refused before it happens.
extern "C" {
void __tsan_read_range(void* a, unsigned long size);
void __tsan_write_range(void* a, unsigned long size);
#ifdef __clang__
#define CF_NO_BUILTIN __attribute__((no_builtin))
#else
#define CF_NO_BUILTIN
#endif
__attribute__((visibility("hidden"), always_inline, no_sanitize_thread)) CF_NO_BUILTIN inline void* memset(void* to, int c, size_t n) noexcept {
    if (n) __tsan_write_range(to, n);
    unsigned char* d = static_cast<unsigned char*>(to);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<unsigned char>(c);
    return to;
}
__attribute__((visibility("hidden"), always_inline, no_sanitize_thread)) CF_NO_BUILTIN inline void* memmove(void* to, const void* from, size_t n) noexcept {
    if (n) __tsan_read_range(const_cast<void*>(from), n), __tsan_write_range(to, n);
    unsigned char* d = static_cast<unsigned char*>(to);
    const unsigned char* s = static_cast<const unsigned char*>(from);
    if (d < s) for (size_t i = 0; i < n; ++i) d[i] = s[i];
    else for (size_t i = n; i-- > 0;) d[i] = s[i];
    return to;
}
__attribute__((visibility("hidden"), always_inline, no_sanitize_thread)) CF_NO_BUILTIN inline void* memcpy(void* __restrict to, const void* __restrict from, size_t n) noexcept {
    return memmove(to, from, n);
}
#undef CF_NO_BUILTIN
}

namespace cuforge_cpu {

inline cuforge_check_shared& check_table() {
    static cuforge_check_shared table;  // (this library's: built with hidden visibility)
    return table;
}

// static_shared_offset's checked form: each declaration with a gap before it.
CF_NOCHECK inline size_t check_shared_offset(size_t size, size_t align, size_t elem, const char* name) {
    align = shared_alignment(size, align);
    static std::mutex lock;
    cuforge_check_shared& t = check_table();
    size_t gap = size < 256 ? 256 : size > 4096 ? 4096 : size, at;
    {
        std::lock_guard<std::mutex> hold(lock);
        at = (t.next + gap + align - 1) / align * align;
        t.next = at + size;
        if (at + size <= STATIC_SHARED && t.count < 64) {
            t.var[t.count].at = at, t.var[t.count].bytes = size, t.var[t.count].elem = elem, t.var[t.count].name = name;
            __atomic_store_n(&t.count, t.count + 1, __ATOMIC_RELEASE);
        }
    }
    if (at + size > STATIC_SHARED)
        fail("the static __shared__ memory of this source's kernels (%zu bytes with '%s' and the checker's gaps between "
             "declarations) is more than the CPU backend's %zu bytes", at + size, name, STATIC_SHARED);
    return at;
}

CF_NOCHECK inline void* check_dynamic_shared(const char* name, size_t elem) {
    cuforge_check_shared& t = check_table();
    if (!__atomic_load_n(&t.dynamic_name, __ATOMIC_ACQUIRE)) {  // (the element size first: the checker reads it after the name)
        t.dynamic_elem = elem;
        __atomic_store_n(&t.dynamic_name, name, __ATOMIC_RELEASE);
    }
    return dynamic_shared();
}

// A block's first thread (the runtime starts each block with its thread 0) announces the block;
// the checker knows the running thread from the worker's w.cur, which the runtime keeps.
CF_NOCHECK inline void check_announce(Worker& w) {
    long long block = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
    cuforge_check_thread(&w.jump, block, &w.cur, w.n, w.shared, &w.bar_gen, &check_table(), &yield_now);  // (yield: a spin's)
}

// What a checked launch gives for a value that is undefined on a GPU (a shuffle's lane outside its
// mask, a CUB reduction's result outside its first thread), of which cuforge_check_undefined
// returned `got` (its site, and which rerun of the launch this is: check.cpp's rerun_undefined).
// The first run: a float or double is the marked NaN of its site, whose mark the checker looks for
// in what the kernel wrote; another type is `own`, what an unchecked launch gives. The two reruns:
// two other values (a float's or a double's zero, then one far from any data; an integer's 1, then
// 1445, never zero, which a division would fault on; a byte's 0, then 1), so that a value that
// decided a result through what drops a NaN (a comparison) or has none (an integer) makes the
// reruns' results differ.
template <class T> CF_NOCHECK T undefined_value(unsigned long long own, unsigned got) {
    constexpr bool f32 = std::is_same<T, float>::value, f64 = std::is_same<T, double>::value;
    unsigned site = got & 255, rerun = got >> 8;
    if constexpr (f32) return rerun ? (rerun == 1 ? 0.f : 1e30f) : from_bits<T>(CUFORGE_CHECK_UNDEFINED_F32(site));
    if constexpr (f64) return rerun ? (rerun == 1 ? 0. : 1e300) : from_bits<T>(CUFORGE_CHECK_UNDEFINED_F64(site));
    if (!rerun) return from_bits<T>(own);
    if (sizeof(T) == 1) return from_bits<T>(rerun - 1);
    return from_bits<T>(rerun == 1 ? 1 : 0x5A5);
}

// A shuffle's result (cuforge_cpu.h's __shfl_*_sync): one read from an undefined lane (`undefined`:
// that lane, else -1) is undefined_value's.
template <class T> CF_NOCHECK T shuffled(unsigned long long bits, int undefined, const char* name, const char* file, unsigned line) {
    if (undefined < 0) return from_bits<T>(bits);
    return undefined_value<T>(bits, cuforge_check_undefined(name, file, line, unsigned(undefined)));
}

// A local variable declared without an initializer is followed (cuforge/_cpu/locals.py puts a
// guard after its declaration) where its bytes are all its value's: a number, or a vector type
// (float4, int2, ...) whose members x, y, z, w fill it, or an array of them. Its bytes are
// undefined until written, and a read before is reported; so are __half, __nv_bfloat16 and their
// pairs (trivial, no padding); a struct (which may have padding), a class with a constructor or a
// pointer is not followed.
template <class T, class = void> struct vector_members { static constexpr size_t bytes = 0; };
template <class T> struct vector_members<T, std::enable_if_t<std::is_arithmetic<decltype(T::x)>::value>> {
    template <class U, class = void> struct y_of { static constexpr size_t n = 0; };
    template <class U> struct y_of<U, decltype(void(U::y))> { static constexpr size_t n = 1; };
    template <class U, class = void> struct z_of { static constexpr size_t n = 0; };
    template <class U> struct z_of<U, decltype(void(U::z))> { static constexpr size_t n = 1; };
    template <class U, class = void> struct w_of { static constexpr size_t n = 0; };
    template <class U> struct w_of<U, decltype(void(U::w))> { static constexpr size_t n = 1; };
    static constexpr size_t bytes = sizeof(T::x) * (1 + y_of<T>::n + z_of<T>::n + w_of<T>::n);
};
template <class E> constexpr bool half_type = std::is_same<E, __half>::value || std::is_same<E, __half2>::value ||
                                           std::is_same<E, __nv_bfloat16>::value || std::is_same<E, __nv_bfloat162>::value;
template <class T, class E = std::remove_all_extents_t<T>>
constexpr bool followed_local = std::is_trivially_default_constructible<E>::value &&
                                (std::is_arithmetic<E>::value || vector_members<E>::bytes == sizeof(E) || half_type<E>);

template <class T, bool = followed_local<T>> struct local_guard {  // (not followed: nothing)
    __attribute__((always_inline)) local_guard(T*, const char*, unsigned) {}
};
template <class T> struct local_guard<T, true> {
    T* at;  // (null: not followed)
    __attribute__((no_sanitize_thread, always_inline)) local_guard(T* p, const char* name, unsigned line)
        : at(cuforge_check_local(p, sizeof(T), name, line) ? p : nullptr) {}
    __attribute__((no_sanitize_thread, always_inline)) ~local_guard() {
        if (at) cuforge_check_local_end(at, sizeof(T));
    }
    local_guard(const local_guard&) = delete;
    local_guard& operator=(const local_guard&) = delete;
};
#define CF_LOCAL(name) cuforge_cpu::local_guard<decltype(name)> cuforge_local_##name(__builtin_addressof(name), #name, __LINE__)

// A kernel K run checked: the thread announces itself, then K's (instrumented) body runs.
// (Inlined into the runtime's loop over the threads: a call per thread less.)
#ifdef CUFORGE_CPU_CHECK_INDEXED
inline void indexed_block(Worker& w);  // (below)
#endif
template <auto K> struct checked;
template <class... A, void (*K)(A...)> struct checked<K> {
    __attribute__((no_sanitize_thread, always_inline)) static void run(A... a) {
        Worker& w = worker();
        if (w.cur == 0) {  // (a call per thread was a third of a checked saxpy's time)
            check_announce(w);
#ifdef CUFORGE_CPU_CHECK_INDEXED
            indexed_block(w);
#endif
        }
        K(a...);
    }
};

#ifdef CUFORGE_CPU_CHECK_INDEXED
// An indexed kernel's build (cuforge/_cpu/indexed.py): not instrumented; each index into an array
// parameter k of the kernel is a call of check_ld<k> (a read) or check_ref<k> (a place written),
// which decides inline what the checker's common case decides on an element's word (the element in
// bounds, and no other thread's access before: cuforge/check_cell.h's word_common, on the shadow the checker keeps)
// and calls the checker for the rest, as the instrumented build's access would: the rules, the
// reports (their line: where this is inlined), a write held.
}  // namespace cuforge_cpu
#include "cuforge/check_cell.h"
extern "C" {
void __tsan_read1(void*);
void __tsan_read2(void*);
void __tsan_read4(void*);
void __tsan_read8(void*);
void __tsan_write1(void*);
void __tsan_write2(void*);
void __tsan_write4(void*);
void __tsan_write8(void*);
}
namespace cuforge_cpu {

// The checker's state of the block that starts on worker w (w.check), where its accesses are ones
// a word holds (cuforge/check_cell.h's word_holds), else null: an indexed kernel has no barrier,
// __syncwarp, fence or grid.sync (indexed.py admits none), so what holds at its start holds for
// its threads' whole run. (Its thread 0 starts it: checked<K>::run.)
inline void indexed_block(Worker& w) {
    uintptr_t sp;
    __asm__("movq %%rsp, %0" : "=r"(sp));
    cuforge_check::View* c = cuforge_check_by_region[sp >> __builtin_ctzll(CUFORGE_CPU_REGION)];
    w.check = c && cuforge_check::word_holds(c, 0) && cuforge_check::word_holds(c, w.n - 1) ? c : nullptr;
}

// The running thread as its inline checks take it, found once, where the kernel starts (indexed.py
// declares it there).
struct indexed_thread {
    cuforge_check::View* c;
    uint32_t who = 0;  // 0: none decided inline
    __attribute__((always_inline)) indexed_thread() {
        Worker& w = worker();
        c = static_cast<cuforge_check::View*>(w.check);
        if (c) who = c->who0 + w.cur;
    }
};

// Element i of array parameter K (the kernel's pointer: the first byte of the argument's copy,
// which the checker gave it, and which an indexed kernel cannot change).
template <int K, class T, class I> __attribute__((always_inline)) inline bool indexed_common(const indexed_thread& th, I i, bool write) {
    if constexpr (K >= CUFORGE_CHECK_PARAMS) {
        return false;
    } else {
        const cuforge_check_param& p = cuforge_check_params[K];
        if (p.granule != sizeof(T) || static_cast<unsigned long long>(i) >= p.count) return false;  // (a negative i too)
        if (!p.words) return true;  // (an In argument: bounds only)
        if (!th.who || th.c->held) return false;
        return cuforge_check::word_update(p.words[static_cast<unsigned long long>(i)], th.who, p.init, write);  // (the rest: the checker's)
    }
}

// The checker's own look at the access (its return address: the kernel's line).
template <class T> __attribute__((always_inline)) inline void indexed_checker(const T* q, bool write) {
    void* a = const_cast<void*>(static_cast<const void*>(q));
    if constexpr (sizeof(T) == 1) write ? __tsan_write1(a) : __tsan_read1(a);
    else if constexpr (sizeof(T) == 2) write ? __tsan_write2(a) : __tsan_read2(a);
    else if constexpr (sizeof(T) == 4) write ? __tsan_write4(a) : __tsan_read4(a);
    else if constexpr (sizeof(T) == 8) write ? __tsan_write8(a) : __tsan_read8(a);
    else static_assert(sizeof(T) == 0, "an indexed build's element is 1, 2, 4 or 8 bytes (indexed.py: its types)");
}

template <int K, class T, class I> __attribute__((always_inline)) inline T check_ld(const indexed_thread& th, const T* p, I i) {
    const T* q = &p[i];
    if (!indexed_common<K, T>(th, i, false)) indexed_checker(q, false);
    return *q;
}

// A place written (p[i] = v, p[i] += v, ++p[i], ...): each operator reads (where the C++ one
// does) and writes as the built-in one, once each, and gives the value written (or, postfix, the one before).
template <int K, class T, class I> struct indexed_place {
    const indexed_thread& th;
    T* q;
    I i;
    __attribute__((always_inline)) T get() const {
        if (!indexed_common<K, T>(th, i, false)) indexed_checker(q, false);
        return *q;
    }
    __attribute__((always_inline)) T set(T v) const {
        if (!indexed_common<K, T>(th, i, true)) indexed_checker(q, true);
        *q = v;
        return v;
    }
    template <class V> __attribute__((always_inline)) T operator=(const V& v) const { return set(static_cast<T>(v)); }
    __attribute__((always_inline)) T operator=(const indexed_place& o) const { return set(o.get()); }
    template <class V> __attribute__((always_inline)) T operator+=(const V& v) const { return set(static_cast<T>(get() + v)); }
    template <class V> __attribute__((always_inline)) T operator-=(const V& v) const { return set(static_cast<T>(get() - v)); }
    template <class V> __attribute__((always_inline)) T operator*=(const V& v) const { return set(static_cast<T>(get() * v)); }
    template <class V> __attribute__((always_inline)) T operator/=(const V& v) const { return set(static_cast<T>(get() / v)); }
    template <class V> __attribute__((always_inline)) T operator%=(const V& v) const { return set(static_cast<T>(get() % v)); }
    template <class V> __attribute__((always_inline)) T operator&=(const V& v) const { return set(static_cast<T>(get() & v)); }
    template <class V> __attribute__((always_inline)) T operator|=(const V& v) const { return set(static_cast<T>(get() | v)); }
    template <class V> __attribute__((always_inline)) T operator^=(const V& v) const { return set(static_cast<T>(get() ^ v)); }
    template <class V> __attribute__((always_inline)) T operator<<=(const V& v) const { return set(static_cast<T>(get() << v)); }
    template <class V> __attribute__((always_inline)) T operator>>=(const V& v) const { return set(static_cast<T>(get() >> v)); }
    __attribute__((always_inline)) T operator++() const { T v = get(); return set(++v); }
    __attribute__((always_inline)) T operator--() const { T v = get(); return set(--v); }
    __attribute__((always_inline)) T operator++(int) const { T v = get(), old = v; set(++v); return old; }
    __attribute__((always_inline)) T operator--(int) const { T v = get(), old = v; set(--v); return old; }
};
template <int K, class T, class I> __attribute__((always_inline)) inline indexed_place<K, T, I> check_ref(const indexed_thread& th, T* p, I i) {
    return {th, &p[i], i};
}
#endif

}  // namespace cuforge_cpu
