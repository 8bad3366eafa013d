// The part of CUDA's crt/host_defines.h that CUDA's own headers (vector_types.h, cuda_fp16.h,
// cuda_bf16.h, cuComplex.h) need when compiled for the host by a C++ compiler. NVRTC has the
// real one built in; the CUDA runtime headers wheel ships without crt/.
#pragma once
#define __no_return__ __attribute__((noreturn))
// (__noinline__ is the attribute's name here, for libstdc++'s own __attribute__((__noinline__)) in
// <string> and <memory> since GCC 13; the translation writes a kernel's __noinline__, a function
// specifier, as __attribute__((noinline)): cuforge/_cpu/translate.py)
#define __noinline__ noinline
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __inline_hint__
#define __align__(n) __attribute__((aligned(n)))
#define __thread__ __thread
#define __import__
#define __export__
#define __cdecl
#define __annotate__(a) __attribute__((a))
#define __location__(a) __annotate__(a)
#define CUDARTAPI
#define CUDARTAPI_CDECL
#define __specialization_static
#define __host__
#define __device__
#define __global__
#define __shared__
#define __constant__
#define __managed__
#define __grid_constant__
#define __launch_bounds__(...)
#define __maxnreg__(n)
#define __cluster_dims__(...)
#define __builtin_align__(a) __align__(a)
#define __cudart_builtin__
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __nv_pure__ __attribute__((pure))
#define __CUDA_ARCH_HAS_FEATURE__(x) 0
#define __restrict__ __restrict
#define __nv_register_params__
#define __DEF_IF_HOST
#define __cudart_api__
#if !defined(__CUDACC_RTC__)
#define EXCLUDE_FROM_RTC
#endif
