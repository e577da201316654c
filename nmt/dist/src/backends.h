#pragma once
// Internal to dist: the communicators behind make_communicator().
#include <memory>

#include "attnlab/nmt/dist/communicator.h"

namespace attnlab::nmt::detail {

// MPI_COMM_WORLD of the job `launch` describes (MPI initialised on first use, finalised at exit).
// Only in builds with MPI (mpi_built()).
std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo& launch);

// NCCL for the gradients on `device` (this rank's GPU), `host` for the bootstrap and the host sums.
// Throws an Error naming the library it looked for when NCCL cannot be loaded.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host, const Device& device);

}  // namespace attnlab::nmt::detail
