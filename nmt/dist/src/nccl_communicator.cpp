// NCCL for the gradients of a CUDA run, loaded at run time (libnccl.so.2, or the file named by
// ATTNLAB_NCCL_LIBRARY) so that attnlab neither builds nor links against it. The ranks find each
// other through the host communicator (MPI): rank 0 makes the NCCL id and the others receive it.
#include <array>
#include <cstdlib>
#include <cstring>

// Boost.DLL over std::filesystem (no Boost.Filesystem library to link), as the plugin loader.
#define BOOST_DLL_USE_STD_FS
#include <boost/dll/shared_library.hpp>
#include <fmt/core.h>

#include "attnlab/env.h"
#include "attnlab/error.h"
#include "backends.h"

namespace attnlab::nmt::detail {
namespace {

// The parts of NCCL's C interface (nccl.h, stable since NCCL 2.0) that a gradient sum needs.
struct NcclUniqueId {
  char internal[128];
};
using NcclComm = struct NcclCommOpaque*;
using NcclResult = int;  // ncclSuccess = 0
constexpr int kNcclFloat32 = 7, kNcclBfloat16 = 9, kNcclSum = 0;

class NcclLibrary {
 public:
  NcclLibrary() {
    path_ = env::value("ATTNLAB_NCCL_LIBRARY").value_or("libnccl.so.2");
    std::error_code error;
    library_.load(path_, boost::dll::load_mode::search_system_folders, error);
    if (error)
      throw Error(fmt::format("data-parallel training on CUDA devices needs NCCL, and {} could not be loaded ({}): "
                              "install NCCL (libnccl2) or set ATTNLAB_NCCL_LIBRARY to its libnccl.so",
                              path_, error.message()));
    get_unique_id = &library_.get<NcclResult(NcclUniqueId*)>("ncclGetUniqueId");
    comm_init_rank = &library_.get<NcclResult(NcclComm*, int, NcclUniqueId, int)>("ncclCommInitRank");
    all_reduce = &library_.get<NcclResult(const void*, void*, std::size_t, int, int, NcclComm, void*)>(
        "ncclAllReduce");
    group_start = &library_.get<NcclResult()>("ncclGroupStart");
    group_end = &library_.get<NcclResult()>("ncclGroupEnd");
    comm_destroy = &library_.get<NcclResult(NcclComm)>("ncclCommDestroy");
    error_string = &library_.get<const char*(NcclResult)>("ncclGetErrorString");
    get_version = &library_.get<NcclResult(int*)>("ncclGetVersion");
  }

  void check(NcclResult result, const char* what) const {
    if (result != 0) throw Error(fmt::format("{} failed: {} (NCCL from {})", what, error_string(result), path_));
  }
  std::string version() const {
    int code = 0;
    check(get_version(&code), "ncclGetVersion");
    // NCCL >= 2.9 encodes X.Y.Z as X*10000 + Y*100 + Z, older ones as X*1000 + Y*100 + Z.
    if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
    return fmt::format("{}.{}.{}", code / 1000, code / 100 % 10, code % 100);
  }

  NcclResult (*get_unique_id)(NcclUniqueId*);
  NcclResult (*comm_init_rank)(NcclComm*, int, NcclUniqueId, int);
  NcclResult (*all_reduce)(const void*, void*, std::size_t, int, int, NcclComm, void*);
  NcclResult (*group_start)();
  NcclResult (*group_end)();
  NcclResult (*comm_destroy)(NcclComm);
  const char* (*error_string)(NcclResult);
  NcclResult (*get_version)(int*);

 private:
  std::string path_;
  boost::dll::shared_library library_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::unique_ptr<Communicator> host, const Device& device)
      : host_(std::move(host)), device_(device) {
    // Rank 0's id reaches every rank as a sum in which the others add zeros.
    NcclUniqueId id{};
    if (host_->is_root()) nccl_.check(nccl_.get_unique_id(&id), "ncclGetUniqueId");
    std::array<double, sizeof(id.internal)> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(id.internal[i]);
    host_->allreduce_sum(bytes);
    for (std::size_t i = 0; i < bytes.size(); ++i) id.internal[i] = static_cast<char>(static_cast<int>(bytes[i]));
    // NCCL binds the communicator to the current CUDA device: the core makes `device` current for
    // its work on it, so a first tensor there sets it.
    (void)Tensor::zeros({1}, DType::f32, device_);
    synchronize(device_);
    nccl_.check(nccl_.comm_init_rank(&comm_, host_->size(), id, host_->rank()), "ncclCommInitRank");
  }
  ~NcclCommunicator() override {
    if (comm_ != nullptr) nccl_.comm_destroy(comm_);
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string describe() const override {
    return fmt::format("NCCL {} on {} (bootstrapped over {})", nccl_.version(), device_.str(), host_->describe());
  }

  // One grouped call; queued on the core's stream of the device, so it is ordered with the backward
  // pass before it and the optimizer step after it.
  void allreduce_sum(std::vector<Tensor>& tensors) override {
    void* stream = cuda_stream(device_);
    nccl_.check(nccl_.group_start(), "ncclGroupStart");
    for (Tensor& t : tensors) {
      ATTNLAB_CHECK(t.device() == device_ && (t.dtype() == DType::f32 || t.dtype() == DType::bf16),
                    "NCCL gradient sums take f32 or bf16 tensors on {}, got {}", device_.str(), t.str());
      const int type = t.dtype() == DType::f32 ? kNcclFloat32 : kNcclBfloat16;
      nccl_.check(nccl_.all_reduce(t.raw_data(), t.raw_data(), static_cast<std::size_t>(t.numel()), type, kNcclSum,
                                   comm_, stream),
                  "ncclAllReduce");
    }
    nccl_.check(nccl_.group_end(), "ncclGroupEnd");
  }
  void allreduce_sum(std::span<double> values) override { host_->allreduce_sum(values); }
  void barrier() override { host_->barrier(); }

 private:
  NcclLibrary nccl_;
  std::unique_ptr<Communicator> host_;
  Device device_;
  NcclComm comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host, const Device& device) {
  return std::make_unique<NcclCommunicator>(std::move(host), device);
}

}  // namespace attnlab::nmt::detail

namespace attnlab::nmt {

std::string nccl_version() { return detail::NcclLibrary().version(); }

}  // namespace attnlab::nmt
