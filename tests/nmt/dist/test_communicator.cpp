#include <doctest/doctest.h>

#include <string>

#include "attnlab/error.h"
#include "attnlab/nmt/dist/communicator.h"
#include "support/env_scope.h"

using namespace attnlab;
using namespace attnlab::nmt;

using attnlab::testing::EnvScope;

TEST_CASE("a process started on its own is a world of one") {
  EnvScope env;
  env.set("OMPI_COMM_WORLD_SIZE", nullptr);
  env.set("SLURM_STEP_NUM_TASKS", nullptr);
  const LaunchInfo launch = detect_launch();
  CHECK(launch.size == 1);
  CHECK(launch.rank == 0);
  CHECK(launch.launcher.empty());
  auto comm = make_communicator(Device::cpu());
  CHECK(comm->size() == 1);
  CHECK(comm->is_root());
  CHECK(comm->describe() == "single process");
  CHECK_FALSE(comm->launched());  // no gradient sums, no data-parallel line
  double values[2] = {1.5, -2.0};
  comm->allreduce_sum(values);
  CHECK(values[0] == 1.5);
  CHECK(values[1] == -2.0);
  CHECK(comm->any(true));
  CHECK_FALSE(comm->any(false));
}

TEST_CASE("the launchers' environments give rank, size and local rank") {
  EnvScope env;
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  LaunchInfo launch = detect_launch();
  CHECK(launch.launcher == "mpirun");
  CHECK(launch.size == 4);
  CHECK(launch.rank == 3);
  CHECK(launch.local_rank == 1);

  env.set("OMPI_COMM_WORLD_SIZE", nullptr);
  env.set("SLURM_STEP_NUM_TASKS", "8");
  env.set("SLURM_PROCID", "5");
  env.set("SLURM_LOCALID", "2");
  env.set("PMIX_RANK", "5");
  launch = detect_launch();
  CHECK(launch.launcher == "srun");
  CHECK(launch.size == 8);
  CHECK(launch.rank == 5);
  CHECK(launch.local_rank == 2);

  // A batch script's environment (no PMI server) is not a data-parallel launch.
  env.set("PMIX_RANK", nullptr);
  env.set("PMI_RANK", nullptr);
  CHECK(detect_launch().size == 1);

  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_RANK", "2");
  CHECK_THROWS_WITH_AS(detect_launch(), doctest::Contains("rank 2 of 2"), Error);
  env.set("OMPI_COMM_WORLD_SIZE", "two");
  CHECK_THROWS_WITH_AS(detect_launch(), doctest::Contains("OMPI_COMM_WORLD_SIZE=two"), Error);
}

TEST_CASE("a CUDA run without NCCL is refused naming the library and how to point at one") {
  EnvScope env;
  env.set("ATTNLAB_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  try {
    (void)nccl_version();
    FAIL("NCCL loaded from a file that does not exist");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(message.find("needs NCCL") != std::string::npos);
    CHECK(message.find("/nonexistent/libnccl.so.2") != std::string::npos);
    CHECK(message.find("ATTNLAB_NCCL_LIBRARY") != std::string::npos);
  }
}
