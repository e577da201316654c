// flash_*_cuda: unpack the tensors and call the launchers of flash_forward_cuda.cu and
// flash_backward_cuda.cu (compiled only when the core has CUDA: CUDA_SOURCES in CMakeLists.txt).
#include <algorithm>

#include "attnlab/device.h"
#include "attnlab/expr/score_call.h"
#include "attnlab/expr/score_kernels.h"
#include "flash_attention_cuda.h"
#include "flash_attention_kernels.h"
#include "flash_kernel_choice.h"
#include "flash_kernel_report.h"

namespace attnlab::flash::detail {
namespace {

cuda::Element element_of(DType dtype) {
  if (dtype == DType::f32) return cuda::Element::f32;
  if (dtype == DType::bf16) return cuda::Element::bf16;
  throw Error(fmt::format("attention flash: dtype {} is not supported on cuda (f32, bf16)", dtype_name(dtype)));
}

void check(int status, const char* what) {
  if (status != 0)
    throw Error(fmt::format("attention flash: the CUDA {} failed: {}", what, cuda::error_string(status)));
}

// A call's score expressions on the device: what their code reads (DeviceArgs), the tensors that
// hold it (kept alive until the kernels are queued), and the learned tensors' fixed-point
// gradient accumulators (backward).
struct DeviceExpressions {
  expr::DeviceArgs args{};
  std::vector<Tensor> keep;
  std::vector<Tensor> grads;  // i64 [numel] per tensor, undefined where not learned
  detail::LoadedExpressionKernels kernels;
};

// The i32 [B] device tensor of lengths.
Tensor device_lengths(const std::vector<std::int64_t>& lengths, Device device) {
  return Tensor::from_vector<std::int32_t>({static_cast<std::int64_t>(lengths.size())},
                                           std::vector<std::int32_t>(lengths.begin(), lengths.end()))
      .to(device);
}

void prepare_expressions(const Tensor& q, const Tensor& k, const Tensor& v, const FlashOptions& o, bool backward,
                         DeviceExpressions& d) {
  const expr::ScoreExprCall& call = *o.expressions;
  const expr::ScoreExpr& e = *call.expr;
  const std::int64_t batch = q.dim(0), heads = q.dim(1), tq = q.dim(2), tk = k.dim(2);
  ATTNLAB_CHECK(static_cast<int>(call.tensors.size()) <= expr::kMaxDeviceTensors,
                "attention flash: the score expressions read {} tensors; the CUDA kernels take at most {}",
                call.tensors.size(), expr::kMaxDeviceTensors);
  const Device dev = q.device();
  for (std::size_t t = 0; t < call.tensors.size(); ++t) {
    Tensor f = call.tensors[t].detach().to(DType::f32).to(dev);
    d.keep.push_back(f);
    d.args.tensors[t] = f.data<float>();
    Tensor g;
    if (backward && e.tensors()[t].learned && call.tensors[t].requires_grad()) {
      g = Tensor::zeros({call.tensors[t].numel()}, DType::i64, dev);
      d.args.grads[t] = reinterpret_cast<unsigned long long*>(g.data<std::int64_t>());
    }
    d.grads.push_back(g);
  }
  const std::vector<std::int64_t> q_len = expr::query_lengths(call, batch, tq), kv_len = expr::key_lengths(call, batch, tk);
  d.keep.push_back(device_lengths(q_len, dev));
  d.args.q_len = d.keep.back().data<std::int32_t>();
  d.keep.push_back(device_lengths(kv_len, dev));
  d.args.kv_len = d.keep.back().data<std::int32_t>();
  d.args.q_offset = static_cast<int>(call.q_offset);
  // The FMA kernels' tiles: kRows queries by kCols keys (flash_tiles.h); the tensor-core kernels
  // combine four of them into one of theirs (flash_tc_device.cuh: mma_tile_class).
  const expr::TileMap map = expr::tile_map(e, batch, heads, tq, tk, call.q_offset, q_len, kv_len, kTileQueries, kTileKeys);
  if (!map.classes.empty()) {
    d.keep.push_back(Tensor::from_vector<std::uint8_t>({static_cast<std::int64_t>(map.classes.size())}, map.classes).to(dev));
    d.args.tiles = d.keep.back().data<std::uint8_t>();
    d.args.tile_rows = static_cast<int>(kTileQueries);
    d.args.tile_cols = static_cast<int>(kTileKeys);
    d.args.tiles_q = static_cast<int>(map.tiles_q);
    d.args.tiles_k = static_cast<int>(map.tiles_k);
    d.args.by_b = map.by_b;
    d.args.by_h = map.by_h;
    d.args.heads = static_cast<int>(heads);
  }
  d.kernels = detail::expression_kernels_on(e, q.dtype(), k.dim(3), v.dim(3), dev.index);
}

// The problem of one call; `slopes` receives the f32 copy of the distance bias's slopes that
// p.slopes points to (kept alive by the caller until the kernels are queued).
cuda::Problem problem(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                      const FlashOptions& o, Tensor& slopes) {
  cuda::Problem p;
  p.element = element_of(q.dtype());
  p.batch = q.dim(0);
  p.heads = q.dim(1);
  p.tq = q.dim(2);
  p.tk = k.dim(2);
  p.dk = q.dim(3);
  p.dv = v.dim(3);
  p.q = q.raw_data();
  p.k = k.raw_data();
  p.v = v.raw_data();
  p.mask = mask.defined() ? mask.raw_data() : nullptr;
  p.key_lengths = lengths.defined() ? lengths.data<std::int32_t>() : nullptr;
  p.causal = o.causal;
  p.scale = static_cast<float>(o.scale);
  p.dropout = o.dropout;
  p.seed = o.seed;
  p.seed_slot = o.seed_slot;
  p.offset = o.offset;
  p.device = q.device().index;
  p.stream = cuda_stream(q.device());
  // Position terms (checked by flash_attention: shapes, q's dtype for the buckets).
  if (o.score_terms.slopes.defined()) {
    slopes = o.score_terms.slopes.to(DType::f32).to(q.device());
    p.slopes = slopes.data<float>();
  }
  if (o.score_terms.bucket_scores.defined()) {
    p.bucket_scores = o.score_terms.bucket_scores.raw_data();
    p.score_clip = o.score_terms.clip;
  }
  if (o.value_terms.bucket_values.defined()) {
    p.bucket_values = o.value_terms.bucket_values.raw_data();
    p.value_clip = o.value_terms.clip;
  }
  return p;
}

void with_expressions(cuda::Problem& p, const DeviceExpressions& d) {
  p.expr = &d.args;
  p.expr_fma = d.kernels.fma;
  p.expr_tc = d.kernels.tc;
  p.expr_hopper = d.kernels.hopper;
}

// The learned tensors' gradients from their fixed-point accumulators, shaped and typed like them.
void expression_gradients(const FlashOptions& o, const DeviceExpressions& d, FlashGrads& g) {
  const expr::ScoreExprCall& call = *o.expressions;
  g.d_expr_tensors.assign(call.tensors.size(), Tensor());
  for (std::size_t t = 0; t < call.tensors.size(); ++t) {
    if (!d.grads[t].defined()) continue;
    std::vector<double> values;
    for (std::int64_t x : d.grads[t].to(Device::cpu()).to_vector<std::int64_t>())
      values.push_back(static_cast<double>(x) / expr::kFixedPointScale);
    g.d_expr_tensors[t] = Tensor::from_vector<double>(call.tensors[t].shape(), values)
                              .to(call.tensors[t].dtype())
                              .to(call.tensors[t].device());
  }
}

// One launch's problem: the position terms' f32 slopes and the expressions' device arguments it
// points into live as long as it does (not copied or moved after construction).
struct Launch {
  Launch(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
         const FlashOptions& options, bool backward)
      : p(problem(q, k, v, mask, lengths, options, slopes)) {
    if (!options.expressions) return;
    prepare_expressions(q, k, v, options, backward, expressions);
    with_expressions(p, expressions);
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  Tensor slopes;
  cuda::Problem p;
  DeviceExpressions expressions;
};

}  // namespace

void flash_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, const Tensor& lengths,
                        const FlashOptions& options, Tensor& out, Tensor& lse) {
  Launch launch(q, k, v, mask, lengths, options, false);
  const cuda::Problem& p = launch.p;
  check(cuda::forward(cuda::choose_on_device(p, cuda::Pass::forward, {out.raw_data()}), p, out.raw_data(),
                      lse.data<float>()),
        "forward");
}

void flash_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                         const Tensor& dout, const Tensor& mask, const Tensor& lengths, const FlashOptions& options,
                         FlashGrads& g) {
  Tensor delta = Tensor::empty(lse.shape(), DType::f32, q.device());
  Launch launch(q, k, v, mask, lengths, options, true);
  const cuda::Problem& p = launch.p;
  // The kernel is chosen once: the scratch is sized for it and it is what the backward launches.
  const cuda::KernelChoice choice = cuda::choose_on_device(
      p, cuda::Pass::backward, {out.raw_data(), dout.raw_data(), g.dq.raw_data(), g.dk.raw_data(), g.dv.raw_data()});
  cuda::TermGrads terms;
  Tensor shares;
  if (g.d_bucket_scores.defined()) terms.d_bucket_scores = g.d_bucket_scores.raw_data();
  if (g.d_bucket_values.defined()) {
    if (p.batch * p.heads == 0) g.d_bucket_values = Tensor::zeros_like(g.d_bucket_values);  // no pair, no gradient
    terms.d_bucket_values = g.d_bucket_values.raw_data();
    const std::int64_t floats = cuda::value_share_floats(choice, p);
    shares = Tensor::empty(Shape{std::max<std::int64_t>(floats, 1)}, DType::f32, q.device());
    terms.value_shares = shares.data<float>();
  }
  check(cuda::backward(choice, p, out.raw_data(), lse.data<float>(), dout.raw_data(), delta.data<float>(),
                       g.dq.raw_data(), g.dk.raw_data(), g.dv.raw_data(), terms),
        "backward");
  if (options.expressions) expression_gradients(options, launch.expressions, g);
}

void flash_key_lengths_cuda(const Tensor& mask, Tensor& lengths) {
  check(cuda::key_lengths(element_of(mask.dtype()), mask.raw_data(), mask.dim(0), mask.dim(1),
                          lengths.data<std::int32_t>(), mask.device().index, cuda_stream(mask.device())),
        "key lengths");
}

std::string flash_kernels_cuda(int device) {
  return describe_cuda_kernels(cuda::device_limits(device), cuda::built_kernels());
}

}  // namespace attnlab::flash::detail
