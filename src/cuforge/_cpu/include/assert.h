// <assert.h> for kernels compiled for the CPU: the C library's, then assert made cuforge's
// again (cuforge/cpu_assert.h), so that a source including it keeps assert a DeviceFaultError.
// No include guard, as the real one has none (NDEBUG is read at each inclusion).
#include_next <assert.h>
#include "cuforge/cpu_assert.h"
