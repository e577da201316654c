// MPI_COMM_WORLD as a Communicator (compiled when CMake found MPI; mpi_absent.cpp otherwise).
// The C interface only (OpenMPI would also pull in its deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "attnlab/error.h"
#include "backends.h"

namespace attnlab::nmt {

bool mpi_built() { return true; }

void abort_parallel_job(int exit_code) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

namespace detail {
namespace {

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(fmt::format("{} failed: {}", what, std::string(text, static_cast<std::size_t>(length))));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ensure_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // An error on one rank is reported by that rank and ends the job, instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit(finalize_at_exit);
}

// "Open MPI v4.1.4": the library's own first words.
std::string library_name() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string name(text, static_cast<std::size_t>(length));
  name = name.substr(0, name.find_first_of(",\n"));
  return name;
}

// Elements per MPI call: counts are ints.
constexpr std::size_t kChunk = std::size_t{1} << 30;

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const LaunchInfo& launch) {
    ensure_initialized();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ATTNLAB_CHECK(rank_ == launch.rank && size_ == launch.size,
                  "MPI says rank {} of {}, the launcher's environment rank {} of {}", rank_, size_, launch.rank,
                  launch.size);
    name_ = library_name();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return fmt::format("MPI ({}), {} rank{}", name_, size_, size_ == 1 ? "" : "s");
  }

  // The tensors in one host buffer, one MPI_Allreduce per 2^30 elements.
  void allreduce_sum(std::vector<Tensor>& tensors) override {
    std::size_t total = 0;
    for (const Tensor& t : tensors) {
      ATTNLAB_CHECK(t.device().is_cpu() && t.dtype() == DType::f32,
                    "MPI gradient sums take f32 tensors on the CPU, got {}", t.str());
      total += static_cast<std::size_t>(t.numel());
    }
    buffer_.resize(total);
    std::size_t at = 0;
    for (const Tensor& t : tensors) {
      std::memcpy(buffer_.data() + at, t.data<float>(), t.nbytes());
      at += static_cast<std::size_t>(t.numel());
    }
    for (std::size_t begin = 0; begin < total; begin += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, total - begin));
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer_.data() + begin, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                "MPI_Allreduce of the gradients");
    }
    at = 0;
    for (Tensor& t : tensors) {
      std::memcpy(t.data<float>(), buffer_.data() + at, t.nbytes());
      at += static_cast<std::size_t>(t.numel());
    }
  }

  void allreduce_sum(std::span<double> values) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM,
                            MPI_COMM_WORLD),
              "MPI_Allreduce");
  }

  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  int rank_ = 0, size_ = 1;
  std::string name_;
  std::vector<float> buffer_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo& launch) {
  return std::make_unique<MpiCommunicator>(launch);
}

}  // namespace detail
}  // namespace attnlab::nmt
