// libcu++'s host threading support, with its yield and sleep made a yield of the CUDA thread:
// a libcu++ wait (cuda::barrier's, cuda::std::atomic's, cuda::pipeline's) polls with a backoff
// that sleeps or yields the OS thread, which on the CPU backend runs every thread of the block
// in turn (fibers): the waiter must let the others run, or it waits for ever. libcu++'s own
// header is read with its two functions renamed, and these take their names.
#ifndef CUFORGE_CPU_CCCL_THREADING_SUPPORT_PTHREAD_H
#define CUFORGE_CPU_CCCL_THREADING_SUPPORT_PTHREAD_H

#define __cccl_thread_yield __cccl_thread_yield_of_the_os
#define __cccl_thread_sleep_for __cccl_thread_sleep_for_of_the_os
#include_next <cuda/std/__thread/threading_support_pthread.h>
#undef __cccl_thread_yield
#undef __cccl_thread_sleep_for

#if defined(_CCCL_HAS_THREAD_API_PTHREAD)
#include <cuda/std/__cccl/prologue.h>
_CCCL_BEGIN_NAMESPACE_CUDA_STD
_CCCL_HOST_DEVICE_API inline void __cccl_thread_yield() { ::cuforge_cpu::yield_now(); }
_CCCL_HOST_DEVICE_API inline void __cccl_thread_sleep_for(::cuda::std::chrono::nanoseconds) { ::cuforge_cpu::yield_now(); }
_CCCL_END_NAMESPACE_CUDA_STD
#include <cuda/std/__cccl/epilogue.h>
#endif

#endif
