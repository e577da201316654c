#include "attnlab/nmt/dist/communicator.h"

#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/core.h>

#include "attnlab/error.h"
#include "backends.h"

namespace attnlab::nmt {
namespace {

std::optional<int> env_int(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  ATTNLAB_CHECK(end != nullptr && *end == '\0' && n >= 0, "environment variable {}={} is not a count", name, value);
  return static_cast<int>(n);
}

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "single process"; }
  void allreduce_sum(std::vector<Tensor>&) override {}
  void allreduce_sum(std::span<double>) override {}
  void barrier() override {}
  bool launched() const override { return false; }
};

}  // namespace

LaunchInfo detect_launch() {
  LaunchInfo info;
  if (auto size = env_int("OMPI_COMM_WORLD_SIZE")) {  // mpirun / mpiexec of OpenMPI
    info.launcher = "mpirun";
    info.size = *size;
    info.rank = env_int("OMPI_COMM_WORLD_RANK").value_or(0);
    info.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK").value_or(0);
  } else if (auto tasks = env_int("SLURM_STEP_NUM_TASKS");
             tasks && (std::getenv("PMIX_RANK") != nullptr || std::getenv("PMI_RANK") != nullptr)) {
    info.launcher = "srun";  // a job step with a PMI server: MPI_Init finds its peers there
    info.size = *tasks;
    info.rank = env_int("SLURM_PROCID").value_or(0);
    info.local_rank = env_int("SLURM_LOCALID").value_or(0);
  }
  ATTNLAB_CHECK(info.size >= 1 && info.rank < info.size, "launcher environment gives rank {} of {}", info.rank,
                info.size);
  return info;
}

bool Communicator::any(bool flag) {
  double value = flag ? 1.0 : 0.0;
  allreduce_sum(std::span<double>(&value, 1));
  return value > 0.0;
}

std::unique_ptr<Communicator> make_single_process() { return std::make_unique<SingleProcess>(); }

std::unique_ptr<Communicator> make_communicator(const Device& device) {
  const LaunchInfo launch = detect_launch();
  if (launch.launcher.empty()) return make_single_process();
  if (!mpi_built())
    throw Error(fmt::format("this process was started by {} as rank {} of {}, but this attnlab was built without "
                            "MPI: install OpenMPI (libopenmpi-dev) and build again",
                            launch.launcher, launch.rank, launch.size));
  std::unique_ptr<Communicator> host = detail::make_mpi_communicator(launch);
  if (device.is_cuda()) return detail::make_nccl_communicator(std::move(host), device);
  return host;
}

}  // namespace attnlab::nmt
