// The one translation unit of the cudnn plugin that includes cuDNN (see cudnn_backend.h): the
// graphs of sdpa_graph.h as cuDNN 9 backend descriptors (tensors, pointwise / reduction / matmul /
// reshape operations, operation graph), an engine from the heuristics (mode A, then the fallback
// list), an execution plan cached per problem, and execution with a variant pack on the core's
// stream of the device (attnlab::cuda_stream).
#include "cudnn_backend.h"

#include <cudnn.h>
#include <cuda_runtime.h>

#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "attnlab/device.h"
#include "attnlab/error.h"
#include "attnlab/tensor.h"
#include "key_lengths_cuda.h"
#include "mask_rule.h"

// Every cuDNN status other than success becomes an attnlab::Error naming the call and the place,
// with cuDNN's own last error message.
#define ATTNLAB_CUDNN_CHECK(call)                                                                \
  do {                                                                                           \
    const cudnnStatus_t status_ = (call);                                                        \
    if (status_ != CUDNN_STATUS_SUCCESS)                                                         \
      ::attnlab::cudnn_attention::throw_cudnn_error(status_, #call, __FILE__, __LINE__);         \
  } while (0)

#define ATTNLAB_CUDNN_CUDA_CHECK(call)                                                           \
  do {                                                                                           \
    const cudaError_t status_ = (call);                                                          \
    if (status_ != cudaSuccess)                                                                  \
      throw ::attnlab::Error(fmt::format("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(status_), \
                                         cudaGetErrorString(status_), #call, __FILE__, __LINE__)); \
  } while (0)

namespace attnlab::cudnn_attention {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  char detail[1024] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  throw Error(fmt::format("cuDNN error {} in {} at {}:{}{}{}", cudnnGetErrorString(status), call, file, line,
                          detail[0] ? ": " : "", detail));
}

namespace {

// A backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) { ATTNLAB_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }
  ~Descriptor() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

  template <typename T>
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, std::int64_t count = 1) {
    ATTNLAB_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
  }
  void set(cudnnBackendAttributeName_t name, const Descriptor& other) {
    cudnnBackendDescriptor_t raw = other.get();
    ATTNLAB_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw));
  }
  void finalize() { ATTNLAB_CUDNN_CHECK(cudnnBackendFinalize(d_)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};
using Owned = std::unique_ptr<Descriptor>;

Owned make(cudnnBackendDescriptorType_t type) { return std::make_unique<Descriptor>(type); }

cudnnDataType_t data_type(GraphDType t) {
  switch (t) {
    case GraphDType::bf16: return CUDNN_DATA_BFLOAT16;
    case GraphDType::f32: return CUDNN_DATA_FLOAT;
    case GraphDType::i32: return CUDNN_DATA_INT32;
    case GraphDType::boolean: return CUDNN_DATA_BOOLEAN;
  }
  throw Error("attention cudnn: unknown graph dtype");
}

cudnnPointwiseMode_t pointwise_mode(PointwiseMode m) {
  switch (m) {
    case PointwiseMode::add: return CUDNN_POINTWISE_ADD;
    case PointwiseMode::sub: return CUDNN_POINTWISE_SUB;
    case PointwiseMode::mul: return CUDNN_POINTWISE_MUL;
    case PointwiseMode::div: return CUDNN_POINTWISE_DIV;
    case PointwiseMode::exp: return CUDNN_POINTWISE_EXP;
    case PointwiseMode::log: return CUDNN_POINTWISE_LOG;
    case PointwiseMode::identity: return CUDNN_POINTWISE_IDENTITY;
    case PointwiseMode::gen_index: return CUDNN_POINTWISE_GEN_INDEX;
    case PointwiseMode::cmp_ge: return CUDNN_POINTWISE_CMP_GE;
    case PointwiseMode::cmp_lt: return CUDNN_POINTWISE_CMP_LT;
    case PointwiseMode::logical_and: return CUDNN_POINTWISE_LOGICAL_AND;
    case PointwiseMode::binary_select: return CUDNN_POINTWISE_BINARY_SELECT;
  }
  throw Error("attention cudnn: unknown pointwise mode");
}

// The handle attributes are deprecated in recent cuDNN 9 headers (a device-property descriptor
// may replace them) but are what every cuDNN 9 release accepts, so they are set with the warning
// silenced here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

// A finalized execution plan with everything it was built from.
struct Plan {
  std::vector<Owned> keep;  // tensors, operations, graph, engine configurations
  Owned plan;
  std::int64_t workspace = 0;
  std::vector<std::int64_t> bound;  // uids the variant pack binds, ascending
};

Owned tensor_descriptor(const GraphTensor& t) {
  Owned d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = data_type(t.dtype);
  const std::int64_t alignment = 16, id = t.uid;
  d->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
  d->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, t.dims.data(), 4);
  d->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, t.strides.data(), 4);
  d->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &id);
  d->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
  const bool is_virtual = t.is_virtual, by_value = t.by_value;
  d->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual);
  if (by_value) d->set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value);
  d->finalize();
  return d;
}

// The operation descriptor of `op`; helper descriptors it needs go to `keep`.
Owned operation_descriptor(const GraphOp& op, const std::map<std::int64_t, Descriptor*>& tensors,
                           std::vector<Owned>& keep) {
  auto t = [&](std::int64_t id) -> const Descriptor& { return *tensors.at(id); };
  const cudnnDataType_t compute = data_type(op.compute);
  switch (op.kind) {
    case OpKind::matmul: {
      Owned desc = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
      const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
      desc->set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32);
      desc->finalize();
      Owned o = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
      o->set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, t(op.x));
      o->set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, t(op.b));
      o->set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, t(op.y));
      o->set(CUDNN_ATTR_OPERATION_MATMUL_DESC, *desc);
      if (op.m_override >= 0) o->set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, t(op.m_override));
      if (op.n_override >= 0) o->set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, t(op.n_override));
      if (op.k_override >= 0) o->set(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, t(op.k_override));
      o->finalize();
      keep.push_back(std::move(desc));
      return o;
    }
    case OpKind::pointwise: {
      Owned desc = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
      const cudnnPointwiseMode_t mode = pointwise_mode(op.pointwise);
      desc->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode);
      desc->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &compute);
      if (op.pointwise == PointwiseMode::gen_index) desc->set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &op.axis);
      desc->finalize();
      Owned o = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
      o->set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *desc);
      o->set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, t(op.x));
      if (op.b >= 0) o->set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, t(op.b));
      if (op.t >= 0) o->set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t(op.t));
      o->set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, t(op.y));
      o->finalize();
      keep.push_back(std::move(desc));
      return o;
    }
    case OpKind::reduction: {
      Owned desc = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
      const cudnnReduceTensorOp_t mode =
          op.reduction == ReductionMode::max ? CUDNN_REDUCE_TENSOR_MAX : CUDNN_REDUCE_TENSOR_ADD;
      desc->set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode);
      desc->set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute);
      desc->finalize();
      Owned o = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
      o->set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, t(op.x));
      o->set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, t(op.y));
      o->set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, *desc);
      o->finalize();
      keep.push_back(std::move(desc));
      return o;
    }
    case OpKind::reshape: {
      Owned o = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
      o->set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, t(op.x));
      o->set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, t(op.y));
      o->finalize();
      return o;
    }
  }
  throw Error("attention cudnn: unknown operation kind");
}

// Builds the operation graph, asks the heuristics for engine configurations and keeps the first
// one that finalizes into an execution plan.
std::unique_ptr<Plan> build_plan(cudnnHandle_t handle, const SdpaGraph& graph, const char* direction,
                                 const SdpaProblem& problem) {
  auto plan = std::make_unique<Plan>();
  std::map<std::int64_t, Descriptor*> tensors;
  for (const auto& t : graph.tensors) {
    plan->keep.push_back(tensor_descriptor(t));
    tensors[t.uid] = plan->keep.back().get();
  }
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const auto& op : graph.ops) {
    plan->keep.push_back(operation_descriptor(op, tensors, plan->keep));
    ops.push_back(plan->keep.back()->get());
  }
  Owned op_graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  op_graph->set(kGraphHandle, CUDNN_TYPE_HANDLE, &handle);
  op_graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
                static_cast<std::int64_t>(ops.size()));
  op_graph->finalize();

  // Mode A first (the one that knows the fused attention engines), the fallback list second.
  std::int64_t tried = 0;
  std::string last_status = "none";
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Owned heuristics = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heuristics->set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *op_graph);
    heuristics->set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    if (const cudnnStatus_t status = cudnnBackendFinalize(heuristics->get()); status != CUDNN_STATUS_SUCCESS) {
      last_status = cudnnGetErrorString(status);
      continue;
    }
    std::int64_t available = 0;
    ATTNLAB_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr));
    std::vector<Owned> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < available; ++i) {
      configs.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(configs.back()->get());
    }
    std::int64_t returned = 0;
    if (available > 0)
      ATTNLAB_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics->get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned, raw.data()));
    for (std::int64_t i = 0; i < returned; ++i, ++tried) {
      Owned candidate = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      candidate->set(kPlanHandle, CUDNN_TYPE_HANDLE, &handle);
      candidate->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[static_cast<std::size_t>(i)]);
      const cudnnStatus_t status = cudnnBackendFinalize(candidate->get());
      if (status != CUDNN_STATUS_SUCCESS) {  // this engine cannot serve the graph: try the next
        last_status = cudnnGetErrorString(status);
        continue;
      }
      std::int64_t count = 0;
      ATTNLAB_CUDNN_CHECK(cudnnBackendGetAttribute(candidate->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                   CUDNN_TYPE_INT64, 1, &count, &plan->workspace));
      plan->plan = std::move(candidate);
      for (auto& c : configs) plan->keep.push_back(std::move(c));
      plan->keep.push_back(std::move(heuristics));
      plan->keep.push_back(std::move(op_graph));
      plan->bound = graph.bound_uids();
      return plan;
    }
  }
  char detail[1024] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  throw Error(fmt::format("attention cudnn: cuDNN {} has no engine for the {} graph of {} ({} engine configurations "
                          "tried, last status {}{}{}); use scaled_dot or flash for this shape",
                          cudnnGetVersion(), direction, problem.str(), tried, last_status, detail[0] ? ": " : "",
                          detail));
}

}  // namespace

struct CudnnSdpa::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;  // the core's stream of the device
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
  std::unordered_map<SdpaProblem, std::unique_ptr<Plan>, SdpaProblemHash> forward_plans, backward_plans;
  // One word of pinned host memory, mapped into the device's address space: the key lengths
  // kernel stores a mask problem there and the host reads it without a copy or a wait.
  std::uint64_t* problem_host = nullptr;
  std::uint64_t* problem_device = nullptr;

  ~Impl() {  // the plans first, then the handle they were built on; errors at teardown are ignored
    forward_plans.clear();
    backward_plans.clear();
    if (handle) {
      cudaSetDevice(device);
      cudnnDestroy(handle);
    }
    if (problem_host) cudaFreeHost(problem_host);
  }

  const Plan& plan(const SdpaProblem& p, bool backward) {
    auto& cache = backward ? backward_plans : forward_plans;
    auto it = cache.find(p);
    if (it != cache.end()) return *it->second;
    auto built = backward ? build_plan(handle, sdpa_backward_graph(p), "backward", p)
                          : build_plan(handle, sdpa_forward_graph(p), "forward", p);
    return *cache.emplace(p, std::move(built)).first->second;
  }

  // Runs the plan with the pointers of `bound` (uid -> pointer; host pointers for by-value
  // scalars) and a workspace of the plan's size.
  void execute(const Plan& plan, const std::map<std::int64_t, void*>& bound) {
    std::vector<std::int64_t> uids;
    std::vector<void*> pointers;
    for (std::int64_t id : plan.bound) {
      auto it = bound.find(id);
      ATTNLAB_CHECK(it != bound.end() && it->second != nullptr, "attention cudnn: no buffer for graph tensor {}", id);
      uids.push_back(id);
      pointers.push_back(it->second);
    }
    Tensor workspace;
    void* workspace_ptr = nullptr;
    if (plan.workspace > 0) {
      workspace = Tensor::empty({plan.workspace}, DType::u8, Device::cuda(device));
      workspace_ptr = workspace.raw_data();
    }
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<std::int64_t>(uids.size()));
    pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers.data(),
             static_cast<std::int64_t>(pointers.size()));
    pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace_ptr);
    pack.finalize();
    ATTNLAB_CUDNN_CHECK(cudnnBackendExecute(handle, plan.plan->get(), pack.get()));
    // The workspace tensor is freed on return: the caching allocator hands its memory out again
    // only to work queued behind this call on the same stream.
  }
};

CudnnSdpa::CudnnSdpa(int device_index) : impl_(std::make_unique<Impl>()) {
  ATTNLAB_CHECK(runtime_version() >= 90000,
                "attention cudnn: cuDNN {} is loaded at run time; the fused attention graphs need cuDNN 9.0 or newer",
                runtime_version());
  impl_->device = device_index;
  ATTNLAB_CUDNN_CUDA_CHECK(cudaSetDevice(device_index));
  ATTNLAB_CUDNN_CHECK(cudnnCreate(&impl_->handle));
  // The core's stream: cuDNN's work stays ordered with the core's kernels, copies, synchronize()
  // and the caching allocator's reuse of the memory it reads and writes.
  impl_->stream = cuda_stream(Device::cuda(device_index));
  ATTNLAB_CUDNN_CHECK(cudnnSetStream(impl_->handle, impl_->stream));
  void* problem = nullptr;
  ATTNLAB_CUDNN_CUDA_CHECK(cudaHostAlloc(&problem, sizeof(std::uint64_t), cudaHostAllocMapped));
  impl_->problem_host = static_cast<std::uint64_t*>(problem);
  *static_cast<volatile std::uint64_t*>(impl_->problem_host) = kNoMaskProblem;
  void* mapped = nullptr;
  ATTNLAB_CUDNN_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, problem, 0));
  impl_->problem_device = static_cast<std::uint64_t*>(mapped);
}

CudnnSdpa::~CudnnSdpa() = default;

std::shared_ptr<CudnnSdpa> CudnnSdpa::for_device(int device_index) {
  // Weak references only: the sessions belong to the modules and nodes that use them.
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<CudnnSdpa>> sessions;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto live = sessions[device_index].lock()) return live;
  std::shared_ptr<CudnnSdpa> made(new CudnnSdpa(device_index));
  sessions[device_index] = made;
  return made;
}

std::size_t CudnnSdpa::runtime_version() { return cudnnGetVersion(); }

void CudnnSdpa::key_lengths(const float* mask, std::int64_t batch, std::int64_t keys, std::int32_t s_q,
                            std::int32_t* seq_len_q, std::int32_t* seq_len_kv) {
  ATTNLAB_CUDNN_CUDA_CHECK(cudaSetDevice(impl_->device));
  const int status = launch_key_lengths(mask, batch, keys, s_q, seq_len_q, seq_len_kv, impl_->problem_device,
                                        impl_->stream);
  ATTNLAB_CHECK(status == 0, "attention cudnn: the key lengths kernel failed to launch for a [{}, {}] mask: {}", batch,
                keys, key_lengths_error_string(status));
}

std::uint64_t CudnnSdpa::take_mask_problem() {
  // An exchange, so that a code the device stores in between is not lost.
  return std::atomic_ref<std::uint64_t>(*impl_->problem_host).exchange(kNoMaskProblem);
}

void CudnnSdpa::forward(const SdpaProblem& p, const ForwardBuffers& b) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  ATTNLAB_CUDNN_CUDA_CHECK(cudaSetDevice(impl_->device));
  const Plan& plan = impl_->plan(p, false);
  float scale = b.scale, fill = std::numeric_limits<float>::lowest();
  std::int32_t s_kv = static_cast<std::int32_t>(p.s_kv), s_q = static_cast<std::int32_t>(p.s_q);
  std::map<std::int64_t, void*> bound{{uid::q, const_cast<void*>(b.q)},
                                      {uid::k, const_cast<void*>(b.k)},
                                      {uid::v, const_cast<void*>(b.v)},
                                      {uid::o, b.o},
                                      {uid::stats, b.stats},
                                      {uid::scale, &scale},
                                      {uid::mask_fill, &fill},
                                      {uid::seq_len_q, const_cast<void*>(b.seq_len_q)},
                                      {uid::seq_len_kv, const_cast<void*>(b.seq_len_kv)},
                                      {uid::causal_s_kv, &s_kv},
                                      {uid::causal_s_q, &s_q}};
  impl_->execute(plan, bound);
}

void CudnnSdpa::backward(const SdpaProblem& p, const BackwardBuffers& b) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  ATTNLAB_CUDNN_CUDA_CHECK(cudaSetDevice(impl_->device));
  const Plan& plan = impl_->plan(p, true);
  const Device device = Device::cuda(impl_->device);
  // f32 scratch of the graph: D = rowsum(dO * O), and dQ accumulated before its cast (zeroed:
  // cuDNN before 9.6 accumulates into it).
  Tensor softmax_sum = Tensor::empty({p.batch, p.heads, p.s_q, 1}, DType::f32, device);
  Tensor d_q_accum = Tensor::zeros({p.batch, p.heads, p.s_q, p.d_qk}, DType::f32, device);
  // Rows of dK and dV past a key length are not computed with padding: they must read as 0.
  const auto bf16_bytes = [&](std::int64_t s, std::int64_t d) {
    return static_cast<std::size_t>(p.batch * p.heads * s * d) * sizeof(std::uint16_t);
  };
  ATTNLAB_CUDNN_CUDA_CHECK(cudaMemsetAsync(b.d_k, 0, bf16_bytes(p.s_kv, p.d_qk), impl_->stream));
  ATTNLAB_CUDNN_CUDA_CHECK(cudaMemsetAsync(b.d_v, 0, bf16_bytes(p.s_kv, p.d_v), impl_->stream));
  float scale = b.scale, fill = std::numeric_limits<float>::lowest(), one = 1.0f;
  std::int32_t s_kv = static_cast<std::int32_t>(p.s_kv), s_q = static_cast<std::int32_t>(p.s_q);
  std::map<std::int64_t, void*> bound{{uid::q, const_cast<void*>(b.q)},
                                      {uid::k, const_cast<void*>(b.k)},
                                      {uid::v, const_cast<void*>(b.v)},
                                      {uid::o, const_cast<void*>(b.o)},
                                      {uid::d_o, const_cast<void*>(b.d_o)},
                                      {uid::stats, const_cast<void*>(b.stats)},
                                      {uid::d_q, b.d_q},
                                      {uid::d_k, b.d_k},
                                      {uid::d_v, b.d_v},
                                      {uid::scale, &scale},
                                      {uid::mask_fill, &fill},
                                      {uid::one, &one},
                                      {uid::softmax_sum, softmax_sum.raw_data()},
                                      {uid::d_q_accum, d_q_accum.raw_data()},
                                      {uid::seq_len_q, const_cast<void*>(b.seq_len_q)},
                                      {uid::seq_len_kv, const_cast<void*>(b.seq_len_kv)},
                                      {uid::causal_s_kv, &s_kv},
                                      {uid::causal_s_q, &s_q}};
  impl_->execute(plan, bound);
}

}  // namespace attnlab::cudnn_attention
