#pragma once
// Attention variants written as expressions (docs/score-expressions.md): a score modification
//   score_mod(score, b, h, q_idx, kv_idx, q_len, kv_len) -> real
// and a mask
//   mask_mod(b, h, q_idx, kv_idx, q_len, kv_len) -> bool  (true where the score is kept)
// over declared tensors (constants, or parameters learned by each attention layer). This header
// is the front end every backend shares: the text is parsed, its names and types checked, its
// tensor indices proven inside their tensors, and it is lowered to one small program (ir.h) with
// its derivatives. The CPU kernels compile that program with the system's C++ compiler
// (score_kernels.h), the CUDA kernels through NVRTC, and the dense reference op interprets it
// (ops/score_expr.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/error.h"
#include "attnlab/name_table.h"
#include "attnlab/random.h"
#include "attnlab/tensor.h"

namespace attnlab::expr {

// Where an expression's text starts in its file, for error messages: the file, and the line and
// column (1-based) of the text's first character. line 0: not from a file.
struct SourceSpot {
  std::string file;
  int line = 0;
  int column = 0;
  std::string key;  // the dotted key that holds the text ("model.attention.score_mod")
};

// An expression's text and where it came from.
struct ExprText {
  std::string text;
  SourceSpot spot;
  bool empty() const { return text.find_first_not_of(" \t\r\n") == std::string::npos; }
};

// How a declared tensor starts: zeros; normal(0, std); ALiBi's slopes (shape [heads]: the
// geometric sequence 2^(-8n/h), with ALiBi's rule for head counts that are not powers of two);
// or the given values, row-major.
enum class TensorInit : std::uint8_t { zeros, normal, alibi_slopes, values };
inline constexpr auto kTensorInits = name_table<TensorInit>("tensor init", {{TensorInit::zeros, "zeros"},
                                                                          {TensorInit::normal, "normal"},
                                                                          {TensorInit::alibi_slopes, "alibi_slopes"},
                                                                          {TensorInit::values, "values"}});

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;  // resolved sizes
  std::vector<bool> per_head;       // dimension d was written "heads"
  TensorInit init = TensorInit::zeros;
  double std = 0.02;                // normal's standard deviation
  std::vector<double> values;       // TensorInit::values
  bool learned = false;             // a parameter of each attention layer
  SourceSpot spot;                  // the [model.attention.tensors.NAME] table
  std::int64_t numel() const;
  std::string shape_text() const;   // "[heads = 8, 17]"
};

// The expressions of one attention site (empty text: none).
struct SiteExprs {
  ExprText score_mod, mask_mod;
  bool any() const { return !score_mod.empty() || !mask_mod.empty(); }
};

// The bounds the checks prove index and integer ranges within: h in [0, heads), q_idx and kv_idx
// in [0, max_length), q_len and kv_len in [0, max_length], b in [0, 2^31).
struct Limits {
  std::int64_t heads = 8;
  std::int64_t max_length = 1024;
};

// An error in an expression or a tensor declaration: the message says where (file:line:column
// inside the string, or the tensor's table) and what.
class ExprError : public Error {
 public:
  using Error::Error;
};

struct Program;  // the lowered program (ir.h)

// One site's expressions, parsed, checked and lowered: immutable, shared by the layers of a model
// and by every backend. build() throws an ExprError for any mistake.
class ScoreExpr {
 public:
  static std::shared_ptr<const ScoreExpr> build(const SiteExprs& site, const std::vector<TensorSpec>& tensors,
                                                const Limits& limits);
  ~ScoreExpr();

  bool has_score_mod() const;
  bool has_mask_mod() const;
  // The declared tensors the expressions read, in declaration order (Program's tensor numbers).
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  // Whether some learned tensor is read by score_mod (its gradient is then computed).
  bool learns() const;
  const Limits& limits() const { return limits_; }
  const SiteExprs& source() const { return source_; }
  const Program& program() const { return *program_; }
  // The normalised text of the program (what the kernels compile), and its 64-bit hash.
  const std::string& canonical() const { return canonical_; }
  std::uint64_t hash() const { return hash_; }

 private:
  ScoreExpr() = default;
  SiteExprs source_;
  std::vector<TensorSpec> tensors_;
  Limits limits_;
  std::unique_ptr<Program> program_;
  std::string canonical_;
  std::uint64_t hash_ = 0;
};

// The tensor `spec` starts as, shaped spec.shape, in `dtype` on `device`; normal values are drawn
// from `init` (attnlab::normal), the others draw nothing.
Tensor initial_tensor(const TensorSpec& spec, Generator& init, DType dtype, Device device);

// ALiBi's slopes for `heads` heads (Press et al. 2022): 2^(-8n/h) for n = 1..h when h is a power of
// two, else those of the nearest smaller power of two followed by every other slope of the next.
std::vector<double> alibi_slopes(std::int64_t heads);

// The names an expression may use, in the order error messages list them.
std::vector<std::string> variable_names(bool with_score);
std::vector<std::string> function_names();

}  // namespace attnlab::expr
