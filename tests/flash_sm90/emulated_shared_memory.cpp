// The emulated Hopper kernels' dynamic shared memory, which every block (one at a time) uses
// (support/cuda_sm90_host_emulation.h declares it).
#include "support/cuda_sm90_host_emulation.h"

namespace attnlab::flash::cuda::sm90 {

char sm90_smem[kEmulatedSmemBytes];

}  // namespace attnlab::flash::cuda::sm90
