// CCCL's typeid.h picks its device form by __CUDA_ARCH__ alone, while CCCL's configuration,
// read before cuforge_cpu.h defines __CUDA_ARCH__, chose the host form: on the CPU it is read
// in its host form, as the rest of CCCL is.
#pragma push_macro("__CUDA_ARCH__")
#undef __CUDA_ARCH__
#include_next <cuda/std/__utility/typeid.h>
#pragma pop_macro("__CUDA_ARCH__")
