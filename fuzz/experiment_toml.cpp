// Fuzzes an experiment file: parse_experiment (TOML syntax, every table and key, the checks). An
// accepted file must hold no negative count, and the resolved configuration written by to_toml
// must read back to the same text (it is what a run folder and its checkpoints keep, and what a
// resumed run compares).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>
#include <string>

#include "attnlab/nmt/experiment/experiment.h"
#include "fuzz_input.h"

namespace {

// What later code takes as sizes or counts (size_t casts, loop bounds) must not be negative in an
// accepted file.
void check_counts(const attnlab::nmt::ExperimentConfig& c) {
  const std::pair<const char*, std::int64_t> counts[] = {
      {"data.synthetic.train_pairs", c.data.synth.train_pairs}, {"data.synthetic.dev_pairs", c.data.synth.dev_pairs},
      {"data.synthetic.test_pairs", c.data.synth.test_pairs},   {"data.max_length", c.data.max_length},
      {"vocab.size", c.vocab.size},                             {"model.encoder_layers", c.model.encoder_layers},
      {"model.decoder_layers", c.model.decoder_layers},         {"model.d_model", c.model.dims.d_model},
      {"model.heads", c.model.dims.n_heads},                    {"model.d_k", c.model.dims.d_k},
      {"model.d_v", c.model.dims.d_v},                          {"model.d_ff", c.model.dims.d_ff},
      {"training.batch_tokens", c.training.batch_tokens},      {"training.accumulate", c.training.accumulate},
      {"training.max_steps", c.training.max_steps},            {"training.keep_checkpoints", c.training.keep_checkpoints},
      {"eval.beam", c.eval.beam},                               {"eval.batch_tokens", c.eval.batch_tokens}};
  for (const auto& [key, value] : counts)
    if (value < 0) {
      std::fprintf(stderr, "accepted a negative %s: %lld\n", key, static_cast<long long>(value));
      std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnlab;
  // Relative paths in the file resolve against its folder: the scratch folder (nothing is read).
  static const std::string source = (fuzz::scratch_dir() / "experiment.toml").string();
  std::optional<nmt::ExperimentConfig> config;
  fuzz::expect_errors([&] { config = nmt::parse_experiment(std::string(fuzz::as_text(data, size)), source); });
  if (!config) return 0;
  check_counts(*config);
  const std::string written = nmt::to_toml(*config);
  try {
    const std::string again = nmt::to_toml(nmt::parse_experiment(written, source));
    if (again != written) {
      std::fprintf(stderr, "to_toml does not read back the same:\n--- written\n%s\n--- read back\n%s\n",
                   written.c_str(), again.c_str());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "to_toml output is refused by parse_experiment: %s\n--- written\n%s\n", e.what(),
                 written.c_str());
    std::abort();
  }
  return 0;
}
