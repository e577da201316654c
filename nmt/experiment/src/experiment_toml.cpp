// The resolved experiment as TOML: every default filled in, so a checkpoint or a run folder says
// exactly what was trained. The run folder itself is left out: it is where a run is kept, not
// what it is, so two folders trained from one configuration hold identical checkpoints.
#include <sstream>

#include "attnlab/nmt/experiment/experiment.h"

namespace attnlab::nmt {
namespace {

toml::table plugin_table(const PluginChoice& choice) {
  toml::table t;
  t.insert("name", choice.name);
  // A fallback equal to the plugin itself changes nothing, so it does not change the identity.
  if (!choice.fallback.empty() && choice.fallback != choice.name) t.insert("fallback", choice.fallback);
  // (Not a structured binding: clang before 16 cannot capture one in the lambda.)
  for (const auto& option : choice.options)
    std::visit([&](const auto& v) { t.insert(option.first, v); }, option.second);
  return t;
}

// The expressions into [model.attention]: score_mod and mask_mod once when every site has the same,
// else each site's in its table; the tensors as declared. Nothing without expressions, so that
// runs without them keep their identity.
void insert_expressions(toml::table& attention, const AttentionExpressions& e) {
  if (!e.any()) return;
  auto same = [](const expr::SiteExprs& a, const expr::SiteExprs& b) {
    return a.score_mod.text == b.score_mod.text && a.mask_mod.text == b.mask_mod.text;
  };
  auto put = [](toml::table& t, const expr::SiteExprs& s) {
    t.insert("score_mod", s.score_mod.text);
    t.insert("mask_mod", s.mask_mod.text);
  };
  if (same(e.encoder, e.decoder) && same(e.encoder, e.cross)) {
    put(attention, e.encoder);
  } else {
    for (AttentionSite site : kAttentionSites) {
      toml::table t;
      put(t, e.site(site));
      attention.insert(attention_site_name(site), t);
    }
  }
  if (e.tensors.empty()) return;
  toml::table tensors;
  for (const auto& spec : e.tensors) {
    toml::array shape;
    for (std::size_t d = 0; d < spec.shape.size(); ++d) {
      if (spec.per_head[d]) shape.push_back("heads");
      else shape.push_back(spec.shape[d]);
    }
    toml::table t{{"shape", shape},
                  {"init", std::string(expr::kTensorInits.name(spec.init))},
                  {"learned", spec.learned}};
    if (spec.init == expr::TensorInit::normal) t.insert("std", spec.std);
    if (spec.init == expr::TensorInit::values) {
      toml::array values;
      for (double v : spec.values) values.push_back(v);
      t.insert("values", values);
    }
    tensors.insert(spec.name, t);
  }
  attention.insert("tensors", tensors);
}

toml::table attention_table(const TransformerConfig& m) {
  toml::table t = plugin_table(m.attention);
  insert_expressions(t, m.expressions);
  return t;
}

toml::table eval_table(const EvalConfig& e) {
  return toml::table{{"beam", e.beam},
                     {"alpha", e.alpha},
                     {"max_length_offset", e.max_length_offset},
                     {"batch_tokens", e.batch_tokens},
                     {"bleu", e.bleu},
                     {"lowercase", e.lowercase},
                     {"average_last", e.average_last}};
}

}  // namespace

std::string to_toml(const ExperimentConfig& c, bool include_eval) {
  toml::table root;
  toml::array paths;
  for (const auto& p : c.plugin_paths) paths.push_back(p);
  root.insert("experiment", toml::table{{"name", c.name},
                                        {"seed", static_cast<std::int64_t>(c.seed)},
                                        {"device", c.device},
                                        {"threads", c.threads},
                                        {"plugin_paths", paths}});
  toml::table data{{"max_length", c.data.max_length},
                   {"max_length_ratio", c.data.max_length_ratio},
                   {"cache_dir", c.data.cache_dir}};
  if (c.data.synthetic) {
    data.insert("synthetic", toml::table{{"train_pairs", c.data.synth.train_pairs},
                                         {"dev_pairs", c.data.synth.dev_pairs},
                                         {"test_pairs", c.data.synth.test_pairs},
                                         {"seed", static_cast<std::int64_t>(c.data.synth.seed)}});
  } else {
    for (const auto& [k, v] : {std::pair{"train_source", &c.data.train_source}, {"train_target", &c.data.train_target},
                               {"dev_source", &c.data.dev_source}, {"dev_target", &c.data.dev_target},
                               {"test_source", &c.data.test_source}, {"test_target", &c.data.test_target}})
      if (!v->empty()) data.insert(k, *v);
  }
  root.insert("data", data);
  root.insert("vocab", toml::table{{"size", c.vocab.size}, {"model_type", c.vocab.model_type}});
  const auto& m = c.model;
  root.insert("model", toml::table{{"encoder_layers", m.encoder_layers},
                                   {"decoder_layers", m.decoder_layers},
                                   {"d_model", m.dims.d_model},
                                   {"heads", m.dims.n_heads},
                                   {"d_k", m.dims.d_k},
                                   {"d_v", m.dims.d_v},
                                   {"d_ff", m.dims.d_ff},
                                   {"max_length", m.dims.max_length},
                                   {"dropout", m.dropout.residual},
                                   {"embedding_dropout", m.dropout.embedding},
                                   {"attention_dropout", m.dropout.attention},
                                   {"ffn_dropout", m.dropout.ffn},
                                   {"layer_norm_eps", m.layer_norm_eps},
                                   {"fused_kernels", m.fused_kernels},
                                   {"attention", attention_table(m)},
                                   {"positional", plugin_table(m.positional)},
                                   {"ffn", plugin_table(m.ffn)},
                                   {"dropout_plugin", plugin_table(m.dropout_plugin)},
                                   {"norm_position", std::string(kNormPositions.name(m.norm_position))},
                                   {"norm", plugin_table(m.norm)}});
  const auto& t = c.training;
  toml::array exclude;
  for (const auto& part : t.weight_decay_exclude) exclude.push_back(part);
  root.insert("training", toml::table{{"batch_tokens", t.batch_tokens},
                                      {"accumulate", t.accumulate},
                                      {"max_steps", t.max_steps},
                                      {"max_seconds", t.max_seconds},
                                      {"warmup_steps", t.warmup_steps},
                                      {"lr_scale", t.lr_scale},
                                      {"schedule", std::string(kLrScheduleKinds.name(t.schedule))},
                                      {"lr", t.lr},
                                      {"min_lr", t.min_lr},
                                      {"optimizer", std::string(kOptimizers.name(t.optimizer))},
                                      {"weight_decay", t.weight_decay},
                                      {"weight_decay_exclude", exclude},
                                      {"clip_norm", t.clip_norm},
                                      {"adam_beta1", t.adam_beta1},
                                      {"adam_beta2", t.adam_beta2},
                                      {"adam_eps", t.adam_eps},
                                      {"label_smoothing", t.label_smoothing},
                                      {"eval_every", t.eval_every},
                                      {"checkpoint_every", t.checkpoint_every},
                                      {"checkpoint_every_seconds", t.checkpoint_every_seconds},
                                      {"keep_checkpoints", t.keep_checkpoints},
                                      {"early_stopping", t.early_stopping},
                                      {"log_every", t.log_every},
                                      {"precision", t.precision}});
  // Written only when on, so that the runs and suite rows of versions without it keep their
  // identity (config.toml is compared byte for byte).
  if (t.rdrop > 0) root["training"].as_table()->insert("rdrop", t.rdrop);
  if (t.pad_to_multiple > 0) root["training"].as_table()->insert("pad_to_multiple", t.pad_to_multiple);
  if (include_eval) root.insert("eval", eval_table(c.eval));
  std::ostringstream out;
  out << root;
  return out.str();
}

std::string eval_to_toml(const EvalConfig& eval) {
  std::ostringstream out;
  out << "# How attnlab eval evaluates this run: the [eval] table of its experiment, rewritten by every\n"
         "# attnlab train of the run. Command-line flags of attnlab eval override it.\n";
  out << toml::table{{"eval", eval_table(eval)}} << "\n";
  return out.str();
}

}  // namespace attnlab::nmt
