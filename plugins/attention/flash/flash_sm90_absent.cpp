// A build without CUTLASS: no Hopper kernel; forward() keeps the sm_80 and FMA kernels.
#include "flash_sm90.h"

namespace attnlab::flash::cuda {

bool sm90_built() { return false; }
std::size_t sm90_forward_smem(std::int64_t) { return 0; }
int sm90_forward(const Problem&, void*, float*) { return 1; }  // cudaErrorInvalidValue: never chosen

}  // namespace attnlab::flash::cuda
