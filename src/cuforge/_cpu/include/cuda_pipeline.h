// cuforge CPU backend: CUDA's <cuda_pipeline.h> in its synchronous form. The CPU build defines
// __CUDA_ARCH__ (cuforge_cpu.h), under which the header copies with cp.async (PTX); without it,
// each __pipeline_memcpy_async copies at once, and the commit and the waits have nothing to wait for.
#pragma once
#pragma push_macro("__CUDA_ARCH__")
#undef __CUDA_ARCH__
#include_next <cuda_pipeline.h>
#pragma pop_macro("__CUDA_ARCH__")
