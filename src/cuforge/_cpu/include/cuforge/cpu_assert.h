// assert in a kernel compiled for the CPU: a failed one ends the launch with DeviceFaultError
// (cuforge_cpu::assert_fail), never the process. No include guard: like <assert.h>, each
// inclusion defines assert anew, by NDEBUG as it is then. It takes effect only in a kernel's
// translation unit once cuforge_cpu.h has declared assert_fail (CUFORGE_CPU_ASSERT); anywhere
// else (the runtime library, a header included before) the C library's assert stays.
#ifdef CUFORGE_CPU_ASSERT
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : ::cuforge_cpu::assert_fail(#e, __FILE__, __LINE__))
#endif
#endif
