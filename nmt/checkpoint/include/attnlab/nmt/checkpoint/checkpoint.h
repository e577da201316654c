#pragma once
// Training checkpoints: one safetensors file holding everything needed to resume a run exactly
// (weights, Adam moments, RNG states, data position) and to know what produced it (resolved
// config, plugins, SentencePiece model hash, attnlab version). Layout: docs/checkpoint-format.md.
//
// Tensor names: model weights under their plain parameter names ("encoder.layers.0.self_attn.
// w_q.weight", Linear weights [out, in] like torch.nn.Linear), so that the weights read by a
// PyTorch user form a state_dict directly; Adam moments as "optim.m.<name>" / "optim.v.<name>".
// A parameter name may therefore not start with "optim.".
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "attnlab/module.h"
#include "attnlab/nmt/checkpoint/safetensors.h"
#include "attnlab/random.h"
#include "attnlab/version.h"

namespace attnlab::nmt {

inline constexpr char kCheckpointFormat[] = "attnlab-checkpoint-1";

// A Generator's state: (seed, offset) restores it exactly.
struct GeneratorState {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  static GeneratorState of(const Generator& generator) {
    return {generator.seed(), generator.offset()};
  }
  void restore(Generator& generator) const { generator.set_state(seed, offset); }
  friend bool operator==(const GeneratorState&, const GeneratorState&) = default;
};

// Where the data pipeline stands: the next batch to train on is `batch_index` of `epoch`.
struct DataPosition {
  std::int64_t epoch = 0;
  std::int64_t batch_index = 0;
  friend bool operator==(const DataPosition&, const DataPosition&) = default;
};

// Adam state. `m` and `v` are either both empty (no optimizer state, e.g. an exported model) or
// hold one tensor per parameter, named like the parameter and shaped like it.
struct AdamState {
  std::int64_t step = 0;  // optimizer steps taken (bias correction)
  std::vector<NamedTensor> m;  // first moments
  std::vector<NamedTensor> v;  // second moments
};

struct Checkpoint {
  std::int64_t step = 0;                     // training step at which it was taken
  std::vector<NamedTensor> parameters;       // Module::named_parameters() order
  AdamState optimizer;
  std::map<std::string, GeneratorState> rng;  // e.g. "dropout", "data.shuffle"
  DataPosition data;
  std::string config;                  // the fully resolved experiment config, as text
  std::string config_format = "toml";  // "toml" or "json"
  std::string plugins = "[]";          // JSON: plugin names, versions, build ids
  std::string spm_model_hash;          // hash of the SentencePiece model the run used
  std::string attnlab_version = ATTNLAB_VERSION_STRING;

  const Tensor* parameter(std::string_view name) const;
};

// Detached host copies of a module's parameters, in named_parameters() order (safe to keep while
// training goes on).
std::vector<NamedTensor> snapshot_parameters(const Module& module);

// Validates the checkpoint (names, shapes, moments matching parameters, JSON strings) and writes
// it atomically, with the xxh3-64 checksum of the data section in "attnlab.checksum".
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);

// Reads a checkpoint with full validation: the safetensors structure, the checksum, every
// metadata key, the moments against the parameters. Throws attnlab::Error "checkpoint '<path>'
// is corrupt: ..." / "... is truncated: ..." / "... is not an attnlab checkpoint: ...".
Checkpoint load_checkpoint(const std::filesystem::path& path);

// Copies the checkpoint's weights into the module's parameters (converted to each parameter's
// dtype and device). Refuses, before changing anything, a parameter missing from the checkpoint,
// a checkpoint weight the module does not have, or a shape mismatch; the message names every
// offending parameter and both shapes.
void apply_to_module(const Checkpoint& checkpoint, Module& module);

}  // namespace attnlab::nmt
