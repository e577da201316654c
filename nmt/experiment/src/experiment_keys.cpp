#include "attnlab/nmt/experiment/experiment_keys.h"

#include <algorithm>
#include <map>

#include <fmt/core.h>

#include "attnlab/config/key_log.h"
#include "attnlab/error.h"
#include "attnlab/nmt/experiment/experiment.h"

namespace attnlab::nmt {
namespace {

// Every table present, so that the reader asks for every key; the values are the fewest that make
// a valid experiment (the log records the defaults the reader falls back to, not these).
constexpr const char* kProbe = R"(
[experiment]
[data]
[data.synthetic]
[vocab]
[model]
[model.attention]
score_mod = "score * NAME[h]"
[model.attention.tensors.NAME]
shape = ["heads"]
[model.attention.encoder]
[model.attention.decoder]
[model.attention.cross]
[model.positional]
[model.ffn]
[model.dropout_plugin]
[model.norm]
[training]
[eval]
)";


// What each key of an experiment file means (KeyMeaning).
const KeyMeaning kMeanings[] = {
    {"experiment", "the run: its name, seed, device and threads"},
    {"experiment.name", "names the run folder runs/NAME"},
    {"experiment.seed", "initial weights, dropout masks and batch order"},
    {"experiment.device", "cpu or cuda:N"},
    {"experiment.threads", "CPU threads; 0: the CPUs this process was given (under run --jobs N, its share)"},
    {"experiment.plugin_paths", "extra folders searched for plugin libraries"},
    {"experiment.run_dir", "where checkpoints and metrics go (default runs/NAME, relative to the working folder)"},
    {"data", "the parallel text: files, or [data.synthetic]"},
    {"data.train_source", "training source file, plain or gzip (required without [data.synthetic])"},
    {"data.train_target", "training target file, line-aligned with the source (required without [data.synthetic])"},
    {"data.dev_source", "development source: dev perplexity during training"},
    {"data.dev_target", "development target"},
    {"data.test_source", "test source for evaluation"},
    {"data.test_target", "test target"},
    {"data.max_length", "training pairs with a side longer than this many words are dropped"},
    {"data.max_length_ratio", "drop pairs whose longer side is more than this ratio of the shorter; 0: off"},
    {"data.cache_dir", "SentencePiece models, encoded corpora, the synthetic corpus (default .cache beside the run folder)"},
    {"data.synthetic", "the built-in synthetic corpus instead of files (attnlab data synth)"},
    {"data.synthetic.train_pairs", "training pairs"},
    {"data.synthetic.dev_pairs", "development pairs"},
    {"data.synthetic.test_pairs", "test pairs"},
    {"data.synthetic.seed", "the corpus generator's seed"},
    {"vocab", "the shared source-target SentencePiece vocabulary"},
    {"vocab.size", "vocabulary size (the paper: about 37000)"},
    {"vocab.model_type", "bpe or unigram"},
    {"model", "the Transformer's sizes, dropout, norms and plugins"},
    {"model.encoder_layers", "N of the encoder (0: none)"},
    {"model.decoder_layers", "N of the decoder"},
    {"model.d_model", "the model width"},
    {"model.heads", "h, attention heads"},
    {"model.d_k", "per-head key size (default d_model / heads)"},
    {"model.d_v", "per-head value size (default d_model / heads)"},
    {"model.d_ff", "the feed-forward network's inner size"},
    {"model.max_length", "longest sequence a positional encoding must serve"},
    {"model.dropout", "P_drop: residual dropout on every sub-layer output"},
    {"model.embedding_dropout", "on the sums of embeddings and positional encodings (default: dropout)"},
    {"model.attention_dropout", "on the attention weights"},
    {"model.ffn_dropout", "on the feed-forward network's hidden activation"},
    {"model.layer_norm_eps", "the epsilon of every norm"},
    {"model.fused_kernels", "each residual add with its norm as one fused op (the same run, faster)"},
    {"model.attention", "the attention plugin: name, fallback, score expressions, and the plugin's options "
                        "(attnlab plugins lists them)"},
    {"model.attention.name", "the attention plugin (attnlab plugins)"},
    {"model.attention.fallback", "the attention plugin that builds the model where the named one cannot serve it"},
    {"model.attention.score_mod", "an expression of score, b, h, q_idx, kv_idx, q_len, kv_len: the modified score at "
                                  "every site (docs/score-expressions.md)"},
    {"model.attention.mask_mod", "an expression true where a score is kept, at every site", "string"},
    {"model.attention.encoder", "the encoder's self-attention's own expressions"},
    {"model.attention.encoder.score_mod", "its score_mod", "string"},
    {"model.attention.encoder.mask_mod", "its mask_mod", "string"},
    {"model.attention.decoder", "the decoder's self-attention's own expressions"},
    {"model.attention.decoder.score_mod", "its score_mod", "string"},
    {"model.attention.decoder.mask_mod", "its mask_mod", "string"},
    {"model.attention.cross", "the cross-attention's own expressions"},
    {"model.attention.cross.score_mod", "its score_mod", "string"},
    {"model.attention.cross.mask_mod", "its mask_mod", "string"},
    {"model.attention.tensors", "the tensors the expressions index, each a table named as the expressions name it"},
    {"model.attention.tensors.NAME", "one tensor; learned ones are parameters of each attention layer"},
    {"model.attention.tensors.NAME.shape", "its sizes: integers, or \"heads\" (required)", "array"},
    {"model.attention.tensors.NAME.values", "its values, with init = \"values\"", "array of numbers"},
    {"model.attention.tensors.NAME.init", "zeros, normal, alibi_slopes or values (default values where values "
                                          "are given)"},
    {"model.attention.tensors.NAME.std", "the standard deviation of init = \"normal\""},
    {"model.attention.tensors.NAME.learned", "trained, and saved in checkpoints"},
    {"model.positional", "the positional plugin and its options"},
    {"model.positional.name", "the positional plugin (attnlab plugins)"},
    {"model.ffn", "the feed-forward plugin and its options"},
    {"model.ffn.name", "the feed-forward plugin (attnlab plugins)"},
    {"model.dropout_plugin", "the dropout plugin and its options"},
    {"model.dropout_plugin.name", "the dropout plugin (attnlab plugins)"},
    {"model.norm", "the norm plugin and its options"},
    {"model.norm.name", "the norm plugin: layer_norm or rms_norm"},
    {"model.norm_position", "post (the paper's), pre or deepnorm"},
    {"training", "the optimizer, schedule, batches, evaluation and checkpoints"},
    {"training.batch_tokens", "source and target tokens per batch, each, padding included"},
    {"training.accumulate", "batches per optimizer step"},
    {"training.pad_to_multiple", "static batch shapes: lengths rounded up to a multiple of this; 0: off"},
    {"training.max_steps", "optimizer steps"},
    {"training.max_seconds", "time budget of one invocation; 0: off"},
    {"training.warmup_steps", "steps of linear warm-up"},
    {"training.lr_scale", "lrate = lr_scale d_model^-0.5 min(step^-0.5, step warmup^-1.5)"},
    {"training.lr", "the peak rate at warmup_steps; 0: the paper's formula (set lr or lr_scale, not both)"},
    {"training.min_lr", "where the cosine and linear schedules end"},
    {"training.weight_decay", "AdamW's decoupled weight decay, on parameters of rank >= 2"},
    {"training.clip_norm", "clip the gradients' global L2 norm to this; 0: off"},
    {"training.adam_beta1", "Adam's beta1"},
    {"training.adam_beta2", "Adam's beta2"},
    {"training.adam_eps", "Adam's epsilon"},
    {"training.label_smoothing", "epsilon_ls"},
    {"training.rdrop", "R-Drop's alpha (two passes per batch); 0: off"},
    {"training.eval_every", "steps between dev evaluations"},
    {"training.checkpoint_every", "steps between checkpoints"},
    {"training.checkpoint_every_seconds", "seconds between checkpoints (whichever comes first)"},
    {"training.keep_checkpoints", "the last K checkpoints are kept"},
    {"training.early_stopping", "stop after this many evaluations without a better dev perplexity; 0: off"},
    {"training.log_every", "steps between log lines and metrics entries"},
    {"training.schedule", "inverse_sqrt (the paper's), cosine, linear or constant"},
    {"training.optimizer", "adam (the paper's) or adamw"},
    {"training.weight_decay_exclude", "parts of parameter names AdamW leaves undecayed", "array of strings", "[]"},
    {"training.precision", "GEMM precision: fp32, tf32 or bf16"},
    {"eval", "decoding and BLEU of attnlab eval and a suite's rows"},
    {"eval.beam", "beam size (1: greedy)"},
    {"eval.alpha", "GNMT length penalty"},
    {"eval.max_length_offset", "outputs up to input length + this"},
    {"eval.batch_tokens", "source tokens per decoding batch"},
    {"eval.bleu", "sacrebleu, tokenized or wmt14"},
    {"eval.lowercase", "score lowercased"},
    {"eval.average_last", "decode with the average of the last K checkpoints; 0: the last one"},
};

}  // namespace

std::vector<ExperimentKey> experiment_keys() {
  config::KeyLog log;
  parse_experiment(kProbe, "probe.toml");
  return with_meanings(log.records(), kMeanings, "experiment keys");
}

std::vector<ExperimentKey> with_meanings(const std::vector<config::KeyRecord>& records,
                                         std::span<const KeyMeaning> catalog, const char* what,
                                         bool (*take)(const std::string&)) {
  std::map<std::string, const KeyMeaning*> meanings;
  for (const KeyMeaning& m : catalog) meanings.emplace(m.path, &m);
  std::vector<ExperimentKey> keys;
  for (const config::KeyRecord& r : records) {
    if (take && !take(r.path)) continue;
    const auto it = meanings.find(r.path);
    ATTNLAB_CHECK(it != meanings.end(), "{}: the reader takes {}, which has no meaning in the catalog", what, r.path);
    const KeyMeaning& m = *it->second;
    const bool own = m.replace || r.type.empty();
    keys.push_back({r.path, r.type.empty() ? m.type : r.type, own ? m.fallback : r.default_value, m.meaning});
    meanings.erase(it);
  }
  ATTNLAB_CHECK(meanings.empty(), "{}: the catalog names {}, which the reader does not take", what,
                meanings.begin()->first);
  return keys;
}

std::string render_experiment_keys(const std::vector<ExperimentKey>& keys, bool markdown) {
  std::string out;
  if (markdown) {
    out = "| key | type | default | meaning |\n| --- | --- | --- | --- |\n";
    for (const ExperimentKey& k : keys)
      out += fmt::format("| `{}` | {} | {} | {} |\n", k.path, k.type,
                         k.default_value.empty() ? "" : fmt::format("`{}`", k.default_value), k.meaning);
    return out;
  }
  std::size_t w_path = 3, w_type = 4, w_default = 7;
  for (const ExperimentKey& k : keys) {
    w_path = std::max(w_path, k.path.size());
    w_type = std::max(w_type, k.type.size());
    w_default = std::max(w_default, k.default_value.size());
  }
  out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", "key", w_path, "type", w_type, "default", w_default, "meaning");
  for (const ExperimentKey& k : keys)
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", k.path, w_path, k.type, w_type, k.default_value, w_default,
                       k.meaning);
  return out;
}

}  // namespace attnlab::nmt
