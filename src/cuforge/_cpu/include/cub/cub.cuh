// cuforge CPU backend: NVRTC refuses <cub/cub.cuh> (CCCL's own check), so the CPU build does too,
// with CCCL's advice: a kernel must build for a GPU as it builds here.
#pragma once
#error "Including <cub/cub.cuh> is not supported when compiling with NVRTC. Include the specific device header instead (e.g. <cub/block/block_reduce.cuh>)."
