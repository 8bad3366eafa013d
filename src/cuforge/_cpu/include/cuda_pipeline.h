// cuforge CPU backend: CUDA's <cuda_pipeline.h>. Its primitives are cuforge's (copies completed at
// their wait: cuda_pipeline_primitives.h), read first so that CUDA's header finds them included;
// its classes copy at once (CUDA's host form, read without __CUDA_ARCH__).
#pragma once
#include <cuda_pipeline_primitives.h>
#pragma push_macro("__CUDA_ARCH__")
#undef __CUDA_ARCH__
#include_next <cuda_pipeline.h>
#pragma pop_macro("__CUDA_ARCH__")
