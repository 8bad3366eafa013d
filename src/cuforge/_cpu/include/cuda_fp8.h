// cuforge CPU backend: CUDA's <cuda_fp8.h> in its host form. The CPU build defines __CUDA_ARCH__
// (cuforge_cpu.h), under which the header converts with PTX; without it, it converts in C++,
// to the same values (IEEE-style rounding to e4m3/e5m2, saturation as asked).
#pragma once
#pragma push_macro("__CUDA_ARCH__")
#undef __CUDA_ARCH__
#include_next <cuda_fp8.h>
#pragma pop_macro("__CUDA_ARCH__")
