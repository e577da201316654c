// Builds without MPI (CMake found no OpenMPI): make_communicator() refuses an MPI launch.
#include "attnlab/error.h"
#include "backends.h"

namespace attnlab::nmt {

bool mpi_built() { return false; }

void abort_parallel_job(int) {}

namespace detail {

std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo&) {
  throw Error("this attnlab was built without MPI: install OpenMPI (libopenmpi-dev) and build again");
}

}  // namespace detail
}  // namespace attnlab::nmt
