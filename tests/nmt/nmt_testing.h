#pragma once
// Shared helpers of the nmt tests: the in-tree plugins, tiny model configurations.
#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/nmt/experiment/experiment.h"
#include "attnlab/nmt/model/transformer.h"
#include "attnlab/plugin/loader.h"
#include "attnlab/testing/gradcheck.h"

namespace attnlab::nmt::testing {

// A registry with every in-tree plugin loaded (once per process).
const Registry& plugins();

// A small model: d_model 8, 2 heads, d_k 3, d_v 5, d_ff 12, one layer each side, no dropout.
TransformerConfig tiny_config(std::int64_t vocab = 11);

// One teacher-forcing batch on the host: 4 sentences (source 7, target 6 tokens) of ids drawn in
// [3, vocab) with a fixed seed, padding (id 0) at the ends of rows, and its count of target
// tokens that are not padding.
struct PaddedBatch {
  Tensor src, tgt_in, tgt_out;  // [4, 7], [4, 6], [4, 6] i64
  std::int64_t tokens = 0;
};
PaddedBatch padded_batch(std::int64_t vocab);

// Finite-difference check of every parameter of the model `config` builds (f64, evaluation mode,
// seeds 7 and 8) under the label-smoothed loss of two fixed sentence pairs (ids below 7).
attnlab::testing::GradcheckResult whole_model_gradcheck(const TransformerConfig& config);

// The same check (doctest CHECK) with the config's dimensions narrowed to d_model 4, 2 heads of 2,
// d_ff 6 and max_length 16: small enough to perturb every weight.
void check_small_model_gradients(TransformerConfig config);

// A model in evaluation mode decodes two fixed sentence pairs (source 4, target 6 tokens, ids
// below 11) at once and step by step through its decoder's caches: the full decoding's logits,
// after checking (REQUIRE) that the steps' equal them to 1e-5.
std::vector<double> full_logits_equal_incremental(Transformer& model);

// The [model] table of the tiny experiments: 1 + 1 layers of width 16, 2 heads, d_ff 32 (more of
// the table's keys may follow it).
inline constexpr const char* kTinyModelTable = R"([model]
encoder_layers = 1
decoder_layers = 1
d_model = 16
heads = 2
d_ff = 32
)";

// A tiny experiment on the synthetic corpus (1 + 1 layers of width 16, dropout 0.1 with attention
// dropout 0.1, 12 steps, a checkpoint every 4, seed 3) in run folder root / run; `extra` TOML is
// appended after its [training] table (e.g. a plugin table).
ExperimentConfig tiny_experiment(const std::filesystem::path& root, const std::string& run,
                                 const std::string& extra = "");

// The latest checkpoint of a run: every parameter, then Adam's first and second moments.
std::vector<std::vector<float>> final_state(const std::filesystem::path& run_dir);

}  // namespace attnlab::nmt::testing
