#include "attnlab/nmt/experiment/experiment.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "attnlab/config/plugin_options.h"
#include "attnlab/config/table_reader.h"
#include "attnlab/device.h"
#include "attnlab/error.h"
#include "attnlab/nmt/metrics/bleu.h"
#include "attnlab/plugin/attention_support.h"
#include "attnlab/plugin/registry.h"
#include "attnlab/precision.h"
#include "attnlab/nmt/experiment/toml_edit.h"
#include "experiment_expressions.h"

namespace attnlab::nmt {
namespace {

namespace fs = std::filesystem;
using config::TableReader;

// Paths in an experiment file are relative to the file's folder; they are stored absolute, so the
// resolved configuration kept in a run folder and its checkpoints still finds its data from
// anywhere.
std::string resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty()) return path;
  const fs::path p = fs::path(path).is_absolute() || base_dir.empty() ? fs::path(path) : fs::path(base_dir) / path;
  return fs::absolute(p).lexically_normal().string();
}

void check_positive(TableReader& t, const std::string& key, std::int64_t value) {
  if (value <= 0) throw Error(fmt::format("{}: {}: must be positive, got {}", t.position(key), t.path(key), value));
}

void check_non_negative(TableReader& t, const std::string& key, std::int64_t value) {
  if (value < 0) throw Error(fmt::format("{}: {}: must be >= 0, got {}", t.position(key), t.path(key), value));
}

// The choice `key` names (`fallback` without it), by the table's names; an error lists them.
template <typename E, std::size_t N>
E read_choice(TableReader& t, const std::string& key, E fallback, const NameTable<E, N>& table) {
  const std::string name = t.get_string(key, std::string(table.name(fallback)));
  if (auto value = table.find(name)) return *value;
  throw Error(fmt::format("{}: {}: {}", t.position(key), t.path(key), table.unknown(name)));
}

// A numeric key of a table and the field its value goes to (kept when the key is absent).
struct NumberKey {
  const char* key;
  std::variant<std::int64_t*, double*> field;
};

void read_numbers(TableReader& t, std::initializer_list<NumberKey> keys) {
  for (const NumberKey& k : keys) {
    if (auto* i = std::get_if<std::int64_t*>(&k.field)) **i = t.get_int(k.key, **i);
    else **std::get_if<double*>(&k.field) = t.get_real(k.key, **std::get_if<double*>(&k.field));
  }
}

void check_real_non_negative(TableReader& t, const std::string& key, double value) {
  if (!(value >= 0.0 && std::isfinite(value)))
    throw Error(fmt::format("{}: {}: must be finite and >= 0, got {}", t.position(key), t.path(key), value));
}

void check_rate(TableReader& t, const std::string& key, double value) {
  if (!(value >= 0.0 && value < 1.0))
    throw Error(fmt::format("{}: {}: must be in [0, 1), got {}", t.position(key), t.path(key), value));
}

// Static shapes pad a target of data.max_length + 1 positions (with eos) up to a multiple of
// training.pad_to_multiple; refused where that passes model.max_length and the unpadded would not.
void check_padded_lengths(TableReader& t, const ExperimentConfig& c) {
  const std::int64_t m = c.training.pad_to_multiple, longest = c.data.max_length + 1;
  if (m <= 0 || longest > c.model.dims.max_length) return;
  const std::int64_t padded = (longest + m - 1) / m * m;
  if (padded > c.model.dims.max_length)
    throw Error(fmt::format("{}: training.pad_to_multiple: {} pads targets of up to data.max_length + 1 = {} positions "
                            "to {}, past model.max_length = {}; raise model.max_length or choose a smaller multiple",
                            t.position("pad_to_multiple"), m, longest, padded, c.model.dims.max_length));
}

// The keys of a plugin table that belong to the experiment, not to the plugin's options.
std::vector<std::string> reserved_keys(const std::string& key) {
  if (key == "attention") {
    std::vector<std::string> keys = {"name", "fallback"};
    for (const auto& k : expression_keys()) keys.push_back(k);
    return keys;
  }
  return {"name"};
}

PluginChoice read_plugin(TableReader& model, const std::string& key, const std::string& default_name) {
  PluginChoice choice{default_name, {}, {}};
  auto t = model.table(key);
  if (!t) return choice;
  choice.name = t->get_string("name", default_name);
  if (key == "attention") choice.fallback = t->get_string("fallback", "");
  const std::vector<std::string> reserved = reserved_keys(key);
  // Options are checked against the plugin's declaration in validate_plugins(); here they are
  // only converted.
  for (const auto& [k, node] : t->raw()) {
    const std::string name(k.str());
    if (std::find(reserved.begin(), reserved.end(), name) != reserved.end()) continue;
    t->accept(name);
    if (auto v = node.value_exact<bool>()) choice.options[name] = *v;
    else if (auto i = node.value_exact<std::int64_t>()) choice.options[name] = *i;
    else if (auto d = node.value_exact<double>()) choice.options[name] = *d;
    else if (auto s = node.value_exact<std::string>()) choice.options[name] = *s;
    else
      throw Error(fmt::format("{}: {}.{}: plugin options must be booleans, numbers or strings",
                              config::source_position(node.source()), t->path(name), name));
  }
  return choice;
}

void read_data(TableReader& t, const std::string& base, DataConfig& d) {
  d.train_source = resolve(base, t.get_string("train_source", ""));
  d.train_target = resolve(base, t.get_string("train_target", ""));
  d.dev_source = resolve(base, t.get_string("dev_source", ""));
  d.dev_target = resolve(base, t.get_string("dev_target", ""));
  d.test_source = resolve(base, t.get_string("test_source", ""));
  d.test_target = resolve(base, t.get_string("test_target", ""));
  d.max_length = t.get_int("max_length", d.max_length);
  check_positive(t, "max_length", d.max_length);
  d.max_length_ratio = t.get_real("max_length_ratio", d.max_length_ratio);
  d.cache_dir = resolve(base, t.get_string("cache_dir", ""));
  if (auto s = t.table("synthetic")) {
    d.synthetic = true;
    d.synth.train_pairs = s->get_int("train_pairs", d.synth.train_pairs);
    d.synth.dev_pairs = s->get_int("dev_pairs", d.synth.dev_pairs);
    d.synth.test_pairs = s->get_int("test_pairs", d.synth.test_pairs);
    d.synth.seed = static_cast<std::uint64_t>(s->get_int("seed", static_cast<std::int64_t>(d.synth.seed)));
    check_positive(*s, "train_pairs", d.synth.train_pairs);
    // (The corpus writer takes them as sizes: -5 wrapped around and read past the generated pairs.)
    check_non_negative(*s, "dev_pairs", d.synth.dev_pairs);
    check_non_negative(*s, "test_pairs", d.synth.test_pairs);
    s->finish();
  }
  if (!d.synthetic && (d.train_source.empty() || d.train_target.empty()))
    throw Error(fmt::format("{}: data: give train_source and train_target, or a [data.synthetic] table",
                            t.position()));
  t.finish();
}

void read_model(TableReader& t, TransformerConfig& m) {
  m.encoder_layers = t.get_int("encoder_layers", m.encoder_layers);
  m.decoder_layers = t.get_int("decoder_layers", m.decoder_layers);
  m.dims.d_model = t.get_int("d_model", m.dims.d_model);
  m.dims.n_heads = t.get_int("heads", m.dims.n_heads);
  // d_k and d_v default to d_model / heads, as in the paper's rows A.
  const std::int64_t per_head = m.dims.n_heads > 0 ? m.dims.d_model / m.dims.n_heads : 0;
  m.dims.d_k = t.get_int("d_k", per_head);
  m.dims.d_v = t.get_int("d_v", per_head);
  m.dims.d_ff = t.get_int("d_ff", m.dims.d_ff);
  m.dims.max_length = t.get_int("max_length", m.dims.max_length);
  const std::pair<const char*, std::int64_t> sizes[] = {
      {"decoder_layers", m.decoder_layers}, {"d_model", m.dims.d_model}, {"heads", m.dims.n_heads},
      {"d_k", m.dims.d_k}, {"d_v", m.dims.d_v}, {"d_ff", m.dims.d_ff}, {"max_length", m.dims.max_length}};
  for (const auto& [key, value] : sizes) check_positive(t, key, value);
  if (m.encoder_layers < 0)
    throw Error(fmt::format("{}: model.encoder_layers: must be >= 0, got {}", t.position("encoder_layers"),
                            m.encoder_layers));
  if (m.dims.d_model % m.dims.n_heads != 0 && !t.has("d_k"))
    throw Error(fmt::format("{}: model.heads: d_model {} is not divisible by {} heads; set d_k and d_v",
                            t.position("heads"), m.dims.d_model, m.dims.n_heads));
  m.dropout.residual = t.get_real("dropout", m.dropout.residual);
  m.dropout.embedding = t.get_real("embedding_dropout", m.dropout.residual);
  m.dropout.attention = t.get_real("attention_dropout", m.dropout.attention);
  m.dropout.ffn = t.get_real("ffn_dropout", m.dropout.ffn);
  for (const char* key : {"dropout", "embedding_dropout", "attention_dropout", "ffn_dropout"})
    if (t.has(key)) check_rate(t, key, t.get_real(key, 0.0));
  m.layer_norm_eps = t.get_real("layer_norm_eps", m.layer_norm_eps);
  m.fused_kernels = t.get_bool("fused_kernels", m.fused_kernels);
  m.attention = read_plugin(t, "attention", m.attention.name);
  read_attention_expressions(t, m);
  m.positional = read_plugin(t, "positional", m.positional.name);
  m.ffn = read_plugin(t, "ffn", m.ffn.name);
  m.dropout_plugin = read_plugin(t, "dropout_plugin", m.dropout_plugin.name);
  m.norm = read_plugin(t, "norm", m.norm.name);
  m.norm_position = read_choice(t, "norm_position", m.norm_position, kNormPositions);
  t.finish();
}

void read_training(TableReader& t, TrainingConfig& c) {
  read_numbers(t, {{"batch_tokens", &c.batch_tokens}, {"accumulate", &c.accumulate},
                   {"pad_to_multiple", &c.pad_to_multiple}, {"max_steps", &c.max_steps},
                   {"max_seconds", &c.max_seconds}, {"warmup_steps", &c.warmup_steps}, {"lr_scale", &c.lr_scale},
                   {"lr", &c.lr}, {"min_lr", &c.min_lr}, {"weight_decay", &c.weight_decay},
                   {"clip_norm", &c.clip_norm}, {"adam_beta1", &c.adam_beta1}, {"adam_beta2", &c.adam_beta2},
                   {"adam_eps", &c.adam_eps}, {"label_smoothing", &c.label_smoothing}, {"rdrop", &c.rdrop},
                   {"eval_every", &c.eval_every}, {"checkpoint_every", &c.checkpoint_every},
                   {"checkpoint_every_seconds", &c.checkpoint_every_seconds},
                   {"keep_checkpoints", &c.keep_checkpoints}, {"early_stopping", &c.early_stopping},
                   {"log_every", &c.log_every}});
  check_non_negative(t, "pad_to_multiple", c.pad_to_multiple);
  c.schedule = read_choice(t, "schedule", c.schedule, kLrScheduleKinds);
  c.optimizer = read_choice(t, "optimizer", c.optimizer, kOptimizers);
  if (t.has("weight_decay_exclude")) c.weight_decay_exclude = t.get_strings("weight_decay_exclude");
  for (const char* key : {"lr", "min_lr", "weight_decay", "clip_norm", "rdrop"})
    check_real_non_negative(t, key, t.get_real(key, 0.0));
  if (c.lr > 0 && c.lr_scale != 1.0)
    throw Error(fmt::format("{}: training.lr: set either lr (the peak rate, {}) or lr_scale (the paper's formula, {}), "
                            "not both", t.position("lr"), c.lr, c.lr_scale));
  if (c.weight_decay > 0 && !decays_weights(c.optimizer))
    throw Error(fmt::format("{}: training.weight_decay: {} needs optimizer = \"adamw\" (Adam has no weight decay)",
                            t.position("weight_decay"), c.weight_decay));
  if (c.min_lr > 0 && !decays_to_min_lr(c.schedule))
    throw Error(fmt::format("{}: training.min_lr: only the \"cosine\" and \"linear\" schedules decay to it, not \"{}\"",
                            t.position("min_lr"), kLrScheduleKinds.name(c.schedule)));
  for (const char* key : {"batch_tokens", "accumulate", "max_steps", "warmup_steps", "eval_every",
                          "checkpoint_every", "keep_checkpoints", "log_every"})
    check_positive(t, key, t.get_int(key, 1));
  check_rate(t, "label_smoothing", c.label_smoothing);
  c.precision = t.get_string("precision", c.precision);
  if (!find_precision(c.precision))
    throw Error(fmt::format("{}: {}: expected \"fp32\", \"tf32\" or \"bf16\", got \"{}\"", t.position("precision"),
                            t.path("precision"), c.precision));
  t.finish();
}

void read_eval(TableReader& e, EvalConfig& v) {
  v.beam = e.get_int("beam", v.beam);
  v.alpha = e.get_real("alpha", v.alpha);
  v.max_length_offset = e.get_int("max_length_offset", v.max_length_offset);
  v.batch_tokens = e.get_int("batch_tokens", v.batch_tokens);
  v.bleu = e.get_string("bleu", v.bleu);
  v.lowercase = e.get_bool("lowercase", v.lowercase);
  v.average_last = e.get_int("average_last", v.average_last);
  check_positive(e, "beam", v.beam);
  check_positive(e, "batch_tokens", v.batch_tokens);
  if (!kBleuModes.find(v.bleu))
    throw Error(fmt::format("{}: eval.bleu: {}", e.position("bleu"), kBleuModes.unknown(v.bleu)));
  e.finish();
}

}  // namespace

toml::table parse_toml_text(const std::string& text, const std::string& source_name) {
  try {
    return toml::parse(std::string_view(text), std::string_view(source_name));
  } catch (const toml::parse_error& e) {
    const auto& where = e.source();
    throw Error(fmt::format("{}:{}:{}: TOML syntax error: {}", source_name, where.begin.line, where.begin.column,
                            e.description()));
  }
}

ExperimentConfig parse_experiment(const std::string& text, const std::string& source_name) {
  return parse_experiment_table(parse_toml_text(text, source_name), source_name);
}

ExperimentConfig parse_experiment_table(toml::table doc, const std::string& source_name) {
  ExperimentConfig c;
  c.source_file = source_name;
  const std::string base = fs::path(source_name).parent_path().string();
  TableReader root(doc, "");
  if (auto e = root.table("experiment")) {
    c.name = e->get_string("name", c.name);
    c.seed = static_cast<std::uint64_t>(e->get_int("seed", static_cast<std::int64_t>(c.seed)));
    c.device = e->get_string("device", c.device);
    try {
      Device::parse(c.device);
    } catch (const Error& err) {
      throw Error(fmt::format("{}: experiment.device: {}", e->position("device"), err.what()));
    }
    c.threads = e->get_int("threads", c.threads);
    for (const auto& p : e->get_strings("plugin_paths")) c.plugin_paths.push_back(resolve(base, p));
    c.run_dir = resolve(base, e->get_string("run_dir", ""));
    e->finish();
  }
  if (c.run_dir.empty()) c.run_dir = (fs::path("runs") / c.name).string();
  auto data = root.table("data");
  if (!data) throw Error(fmt::format("{}: missing [data] table", source_name));
  read_data(*data, base, c.data);
  if (c.data.cache_dir.empty())
    c.data.cache_dir = fs::absolute(fs::path(c.run_dir).parent_path() / ".cache").lexically_normal().string();
  if (auto v = root.table("vocab")) {
    c.vocab.size = v->get_int("size", c.vocab.size);
    check_positive(*v, "size", c.vocab.size);
    c.vocab.model_type = v->get_string("model_type", c.vocab.model_type);
    if (c.vocab.model_type != "bpe" && c.vocab.model_type != "unigram")
      throw Error(fmt::format("{}: vocab.model_type: expected \"bpe\" or \"unigram\", got \"{}\"",
                              v->position("model_type"), c.vocab.model_type));
    v->finish();
  }
  c.model.vocab_size = c.vocab.size;
  if (auto m = root.table("model")) read_model(*m, c.model);
  if (auto t = root.table("training")) {
    read_training(*t, c.training);
    check_padded_lengths(*t, c);
  }
  if (auto e = root.table("eval")) read_eval(*e, c.eval);
  root.finish();
  c.document = std::make_shared<const toml::table>(std::move(doc));
  return c;
}

ExperimentConfig load_experiment(const std::string& path) { return load_experiment(path, {}); }

ExperimentConfig load_experiment(const std::string& path, const std::vector<std::string>& settings) {
  toml::table command_line = command_line_settings(settings);  // a malformed setting first
  std::ifstream in(path, std::ios::binary);
  ATTNLAB_CHECK(in.good(), "cannot open experiment file {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  toml::table doc = parse_toml_text(ss.str(), path);
  merge(doc, std::move(command_line));
  return parse_experiment_table(std::move(doc), path);
}

DType compute_dtype(const ExperimentConfig&) { return DType::f32; }

std::vector<std::string> validate_plugins(const ExperimentConfig& c, const Registry& registry) {
  struct Site {
    const char* key;
    PluginFamily family;
    const PluginChoice* choice;
  };
  const Site sites[] = {{"attention", PluginFamily::attention, &c.model.attention},
                        {"positional", PluginFamily::positional, &c.model.positional},
                        {"ffn", PluginFamily::ffn, &c.model.ffn},
                        {"dropout_plugin", PluginFamily::dropout, &c.model.dropout_plugin},
                        {"norm", PluginFamily::norm, &c.model.norm}};
  const toml::table* model = c.document ? (*c.document)["model"].as_table() : nullptr;
  std::vector<std::string> notices;
  for (const Site& s : sites) {
    const toml::table* table = model ? (*model)[s.key].as_table() : nullptr;
    // A table made by a suite's dotted override ("model.attention.name") has no position of its
    // own: use its first value's.
    const toml::source_region* region = table ? &table->source() : nullptr;
    if (table && !region->begin && !table->empty()) region = &table->cbegin()->second.source();
    const std::string where = table ? config::source_position(*region) + ": model." + s.key
                                    : c.source_file + ": model." + s.key;
    const PluginInfo* info = nullptr;
    try {
      info = &registry.find(s.family, s.choice->name);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
    const std::string plugin = fmt::format("{} plugin '{}'", family_name(s.family), s.choice->name);
    if (table)
      config::plugin_options_from_toml(info->options, *table, std::string("model.") + s.key, plugin,
                                       reserved_keys(s.key));
    else
      Options::with_defaults(info->options, s.choice->options);
    if (s.family != PluginFamily::attention) continue;
    // The fallback must exist even when this row does not need it (it may on another device).
    const std::string& fallback = s.choice->fallback;
    if (!fallback.empty() && !registry.contains(PluginFamily::attention, fallback)) {
      const toml::node* node = table ? table->get("fallback") : nullptr;
      const std::string at = node ? config::source_position(node->source()) + ": model.attention.fallback"
                                  : where + ".fallback";
      try {
        registry.find(PluginFamily::attention, fallback);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {} (the fallback must be an attention plugin)", at, e.what()));
      }
    }
    AttentionResolution r;
    try {
      r = resolve_attention(c.model, registry, Device::parse(c.device), compute_dtype(c));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", where, e.what()));
    }
    if (!r.notice.empty()) notices.push_back(fmt::format("{}: {}", where, r.notice));
  }
  return notices;
}

std::optional<EvalConfig> read_run_eval(const std::string& run_dir) {
  const fs::path path = fs::path(run_dir) / kRunEvalFile;
  if (!fs::exists(path)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  toml::table doc = parse_toml_text(text.str(), path.string());
  TableReader root(doc, "");
  EvalConfig eval;
  if (auto e = root.table("eval")) read_eval(*e, eval);
  root.finish();
  return eval;
}

}  // namespace attnlab::nmt
