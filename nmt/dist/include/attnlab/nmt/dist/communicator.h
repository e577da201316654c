#pragma once
// Data-parallel training: the processes of one training run and the sums they share.
//
// A run started by `mpirun -np N` or `srun -n N` is N ranks of one training job. Each rank takes
// its share of every batch, and the gradients are summed over the ranks before the optimizer step:
// on the CPU with MPI_Allreduce (OpenMPI), on CUDA devices with NCCL (libnccl loaded at run time).
// A process started on its own is a world of one rank and needs neither.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnlab/device.h"
#include "attnlab/tensor.h"

namespace attnlab::nmt {

// How this process was started, read from the launcher's environment variables.
struct LaunchInfo {
  int rank = 0;          // 0 .. size-1
  int size = 1;          // processes in the job
  int local_rank = 0;    // rank among the processes on this machine (which GPU to take)
  std::string launcher;  // "mpirun" (OpenMPI), "srun" (Slurm), "" (started on its own)
};
LaunchInfo detect_launch();

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single process", "MPI (OpenMPI 4.1.4), 2 ranks", "NCCL 2.21.5 over MPI, 8 ranks".
  virtual std::string describe() const = 0;
  // Sums every tensor element-wise over the ranks, in place: afterwards each rank holds the same
  // sums. The tensors are f32 (or bf16 on CUDA), contiguous, all on this rank's device.
  virtual void allreduce_sum(std::vector<Tensor>& tensors) = 0;
  // Sums a few numbers on the host over the ranks, in place (losses, token counts, flags).
  virtual void allreduce_sum(std::span<double> values) = 0;
  virtual void barrier() = 0;
  // Whether a launcher (mpirun, srun) started this process, even as the only rank: its
  // communicator then goes through MPI (and NCCL on CUDA) although no other rank adds anything.
  virtual bool launched() const { return true; }

  bool is_root() const { return rank() == 0; }
  // True on every rank when `flag` is true on any rank (every rank must call it).
  bool any(bool flag);
};

// The world of one process: no communication at all.
std::unique_ptr<Communicator> make_single_process();

// The communicator of this process for a run on `device`: a single process when not launched by
// MPI; MPI for the CPU; NCCL (bootstrapped over MPI) for CUDA devices. Throws an Error naming what
// is missing when launched by an MPI launcher but built without MPI, or when a CUDA run has no
// NCCL library. The MPI library is initialised on first use and finalised at exit.
std::unique_ptr<Communicator> make_communicator(const Device& device);

// After an error on one rank of a data-parallel job: ends every rank at once (MPI_Abort) instead of
// leaving the others waiting for this one in the next sum. Does nothing in a single process.
void abort_parallel_job(int exit_code);

// Whether this build can talk MPI (OpenMPI found at configure time).
bool mpi_built();

// Loads NCCL as a data-parallel CUDA run does (libnccl.so.2 from the system's library path, or the
// file ATTNLAB_NCCL_LIBRARY names) and returns its version, "2.21.5"; throws the Error such a run
// would stop with when it cannot be loaded.
std::string nccl_version();

}  // namespace attnlab::nmt
