// linear's forward as one cuBLASLt matmul with an epilogue: the bias (linear), or the bias and the
// ReLU (linear_relu), are applied to the product inside the GEMM's epilogue instead of being
// broadcast into the output first and read back by an accumulating GEMM (fill_rows + beta = 1),
// and, for the ReLU, instead of one more pass over the output (the CPU's and the fallback's way).
//
// Row-major y (m, n) = x (m, k) W(n, k)^T + bias (n), through column-major cuBLASLt:
//   D = y^T (n x m, ld n) = op(A) op(B) with
//     A = W: row-major (n, k) is column-major k x n (ld k), op(A) = A^T (n x k): TRANSA = T
//     B = x: row-major (m, k) is column-major k x m (ld k), op(B) = B (k x m):   TRANSB = N
//   and the bias (length n = D's rows) broadcast over D's m columns (CUBLASLT_EPILOGUE_BIAS);
//   RELU_BIAS then takes max(0, .) of each element, RELU does without the bias.
// Types as matmul_cuda.cu: A and B f32 (exact or tf32 compute) or bf16 (bf16 math), C = D f32,
// f32 scale, f32 bias (cuBLASLt's default bias type is D's).
//
// Untested on a GPU so far; tests/cuda compares it with the CPU's fill_rows + sgemm (+ relu).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "cuda/check.cuh"
#include "cuda/context.h"
#include "ops/matmul_cuda.h"

namespace attnlab::cuda {
namespace {

using detail::GemmMath;
using detail::GemmSpec;

// The descriptors of one call, destroyed at scope exit.
struct LtObjects {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtObjects() = default;
  LtObjects(const LtObjects&) = delete;
  LtObjects& operator=(const LtObjects&) = delete;
  ~LtObjects() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// The largest power of two, at most 256, that divides the address: what the pointer guarantees
// to cuBLASLt's alignment preferences (256 is its default assumption).
std::uint32_t alignment_of(const void* p) {
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

// The heuristic's answer for one configuration: the algorithm, or none. Batches change the row
// count m from step to step, so the cache is bounded (cleared when full).
struct AlgoKey {
  int device;
  std::int64_t m, n, k;
  int math, epilogue;
  std::uint32_t align_a, align_b, align_d, align_bias;
  bool operator==(const AlgoKey&) const = default;
};
struct AlgoKeyHash {
  std::size_t operator()(const AlgoKey& k) const {
    std::size_t h = static_cast<std::size_t>(k.device);
    for (std::uint64_t v : {static_cast<std::uint64_t>(k.m), static_cast<std::uint64_t>(k.n),
                            static_cast<std::uint64_t>(k.k),
                            static_cast<std::uint64_t>(k.math) << 8 | static_cast<std::uint64_t>(k.epilogue),
                            static_cast<std::uint64_t>(k.align_a) << 32 | k.align_b,
                            static_cast<std::uint64_t>(k.align_d) << 32 | k.align_bias})
      h = h * 1000003u ^ std::hash<std::uint64_t>{}(v);
    return h;
  }
};
struct AlgoChoice {
  bool found = false;
  cublasLtMatmulHeuristicResult_t result{};
};
constexpr std::size_t kMaxCachedAlgos = 4096;

std::mutex g_cache_mutex;
std::unordered_map<AlgoKey, AlgoChoice, AlgoKeyHash>& algo_cache() {
  static auto* const cache = new std::unordered_map<AlgoKey, AlgoChoice, AlgoKeyHash>;  // leaked, as contexts
  return *cache;
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  ATTNLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}
template <typename T>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
  ATTNLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

cublasLtEpilogue_t lt_epilogue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::relu: return CUBLASLT_EPILOGUE_RELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// linear's shape (one product x (m, k) W(n, k)^T, written, not accumulated), every extent
// positive and within cuBLASLt's int range.
bool linear_shape(const GemmSpec& s) {
  const auto fits = [](std::int64_t v) { return v > 0 && v <= static_cast<std::int64_t>(INT_MAX); };
  return s.batch == 1 && !s.trans_a && s.trans_b && !s.a_shared && !s.reduce && !s.accumulate && fits(s.m) &&
         fits(s.n) && fits(s.k);
}

}  // namespace

bool gemm_lt(const GemmSpec& spec, LtEpilogue epilogue, int device_index, const void* a, const void* b,
             const void* bias, void* out) {
  if (!linear_shape(spec)) return false;
  const bool with_bias = epilogue != LtEpilogue::relu;
  if (with_bias && bias == nullptr) return false;
  const Context& ctx = Context::get(device_index);
  ctx.make_current();
  const cudaDataType_t ab_type = spec.math == GemmMath::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      spec.math == GemmMath::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const auto m = static_cast<std::uint64_t>(spec.m), n = static_cast<std::uint64_t>(spec.n),
             k = static_cast<std::uint64_t>(spec.k);

  LtObjects lt;
  ATTNLAB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&lt.op, compute, CUDA_R_32F));
  set_desc(lt.op, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  set_desc(lt.op, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
  set_desc(lt.op, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<std::uint32_t>(lt_epilogue(epilogue)));
  if (with_bias) set_desc(lt.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  // A = W (k x n, ld k), B = x (k x m, ld k), C = D = y^T (n x m, ld n); see the top of the file.
  ATTNLAB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lt.a, ab_type, k, n, static_cast<std::int64_t>(k)));
  ATTNLAB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lt.b, ab_type, k, m, static_cast<std::int64_t>(k)));
  ATTNLAB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lt.d, CUDA_R_32F, n, m, static_cast<std::int64_t>(n)));

  // cuBLASLt's A is our b (the weight) and its B is our a (x).
  const AlgoKey key{device_index,
                    spec.m,
                    spec.n,
                    spec.k,
                    static_cast<int>(spec.math),
                    static_cast<int>(epilogue),
                    alignment_of(b),
                    alignment_of(a),
                    alignment_of(out),
                    with_bias ? alignment_of(bias) : 0u};
  AlgoChoice choice;
  bool cached = false;
  {
    std::lock_guard lock(g_cache_mutex);
    auto& cache = algo_cache();
    if (auto it = cache.find(key); it != cache.end()) choice = it->second, cached = true;
  }
  if (!cached) {
    ATTNLAB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&lt.pref));
    set_pref(lt.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<std::uint64_t>(ctx.workspace_bytes()));
    set_pref(lt.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a);
    set_pref(lt.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b);
    set_pref(lt.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d);
    set_pref(lt.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d);
    int count = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt(), lt.op, lt.a, lt.b, lt.d, lt.d,
                                                                 lt.pref, 1, &choice.result, &count);
    // NOT_SUPPORTED (no heuristic for this configuration) or no result: the caller falls back.
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) ATTNLAB_CUBLAS_CHECK(status);
    choice.found = status == CUBLAS_STATUS_SUCCESS && count > 0 && choice.result.state == CUBLAS_STATUS_SUCCESS &&
                   choice.result.workspaceSize <= ctx.workspace_bytes();
    std::lock_guard lock(g_cache_mutex);
    auto& cache = algo_cache();
    if (cache.size() >= kMaxCachedAlgos) cache.clear();
    cache.emplace(key, choice);
  }
  if (!choice.found) return false;

  const float alpha = 1.0f, beta = 0.0f;  // D = epilogue(A B) (C is not read with beta 0)
  ATTNLAB_CUBLAS_CHECK(cublasLtMatmul(ctx.cublas_lt(), lt.op, &alpha, b, lt.a, a, lt.b, &beta, out, lt.d, out, lt.d,
                                      &choice.result.algo, ctx.workspace(), ctx.workspace_bytes(), ctx.stream()));
  return true;
}

}  // namespace attnlab::cuda
