// cuforge::float16x8 and cuforge::bfloat16x8: what cf.vector(cf.float16, 8) and
// cf.vector(cf.bfloat16, 8) are in the kernels cuforge writes.
//
// Eight 16-bit floats in 16 bytes, aligned to 16, so that one load or store moves all eight
// (one 128-bit access, as float4's does): llm.c's Packed128<half>. CUDA has no such type.
// The lanes are v[0..7] (also through operator[]), and h2(i) gives lanes 2i and 2i+1 as a
// __half2 / __nv_bfloat162 for the paired intrinsics (__hadd2, __hfma2, ...).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace cuforge {

template <typename T, typename T2>
struct alignas(16) vec8_16bit {
    typedef T value_type;
    T v[8];

    __host__ __device__ T& operator[](int i) { return v[i]; }
    __host__ __device__ const T& operator[](int i) const { return v[i]; }
    __device__ T2& h2(int i) { return reinterpret_cast<T2*>(v)[i]; }
    __device__ const T2& h2(int i) const { return reinterpret_cast<const T2*>(v)[i]; }
};

typedef vec8_16bit<__half, __half2> float16x8;
typedef vec8_16bit<__nv_bfloat16, __nv_bfloat162> bfloat16x8;

static_assert(sizeof(float16x8) == 16 && alignof(float16x8) == 16, "float16x8: 16 bytes, aligned to 16");
static_assert(sizeof(bfloat16x8) == 16 && alignof(bfloat16x8) == 16, "bfloat16x8: 16 bytes, aligned to 16");

}  // namespace cuforge
