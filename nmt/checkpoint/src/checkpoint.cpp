#include "attnlab/nmt/checkpoint/checkpoint.h"

#include <charconv>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "attnlab/autograd.h"
#include "attnlab/nmt/io/checksum.h"

namespace attnlab::nmt {
namespace {

using json = nlohmann::ordered_json;

constexpr char kOptimM[] = "optim.m.";
constexpr char kOptimV[] = "optim.v.";
constexpr char kOptimPrefix[] = "optim.";

namespace key {
// "format" is safetensors' own key (PyTorch writes "pt"); the rest are attnlab's.
constexpr char format_pt[] = "format";
constexpr char format[] = "attnlab.format", checksum[] = "attnlab.checksum", step[] = "attnlab.step";
constexpr char optimizer[] = "attnlab.optimizer", rng[] = "attnlab.rng", data_position[] = "attnlab.data_position";
constexpr char config[] = "attnlab.config", config_format[] = "attnlab.config_format", plugins[] = "attnlab.plugins";
constexpr char spm_model_hash[] = "attnlab.spm_model_hash", version[] = "attnlab.version";
}  // namespace key

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string data_checksum(const std::vector<NamedTensor>& tensors) {
  Xxh3Hasher hasher;
  for (const auto& t : tensors) hasher.update(t.tensor.raw_data(), t.tensor.nbytes());
  return hasher.digest_string();
}

// Checks what save and load both require; `label` starts every message.
void validate(const Checkpoint& c, const std::string& label) {
  ATTNLAB_CHECK(c.step >= 0, "{}: step {} is negative", label, c.step);
  ATTNLAB_CHECK(c.optimizer.step >= 0, "{}: optimizer step {} is negative", label,
                c.optimizer.step);
  ATTNLAB_CHECK(c.data.epoch >= 0 && c.data.batch_index >= 0,
                "{}: data position (epoch {}, batch {}) is negative", label, c.data.epoch,
                c.data.batch_index);
  ATTNLAB_CHECK(c.config_format == "toml" || c.config_format == "json",
                "{}: config_format '{}' is neither 'toml' nor 'json'", label, c.config_format);
  if (c.config_format == "json") {
    ATTNLAB_CHECK(json::accept(c.config), "{}: the config is declared JSON but does not parse",
                  label);
  }
  ATTNLAB_CHECK(json::accept(c.plugins), "{}: the plugins string is not valid JSON: {}", label,
                c.plugins);
  std::map<std::string_view, const Tensor*> params;
  for (const auto& [name, t] : c.parameters) {
    ATTNLAB_CHECK(!name.empty(), "{}: a parameter has an empty name", label);
    ATTNLAB_CHECK(!starts_with(name, kOptimPrefix),
                  "{}: parameter name '{}' starts with the reserved prefix 'optim.'", label, name);
    ATTNLAB_CHECK(t.defined(), "{}: parameter '{}' is undefined", label, name);
    ATTNLAB_CHECK(params.emplace(name, &t).second, "{}: duplicate parameter '{}'", label, name);
  }
  const auto& m = c.optimizer.m;
  const auto& v = c.optimizer.v;
  if (m.empty() && v.empty()) return;
  for (const auto* moments : {&m, &v}) {
    const char* which = moments == &m ? "first moment (optim.m)" : "second moment (optim.v)";
    std::set<std::string_view> seen;
    for (const auto& [name, t] : *moments) {
      auto it = params.find(name);
      ATTNLAB_CHECK(it != params.end(), "{}: Adam {} for '{}', which is not a parameter", label,
                    which, name);
      ATTNLAB_CHECK(seen.insert(name).second, "{}: duplicate Adam {} for '{}'", label, which,
                    name);
      ATTNLAB_CHECK(t.defined() && t.shape() == it->second->shape(),
                    "{}: Adam {} for '{}' has shape {} but the parameter has shape {}", label,
                    which, name, t.defined() ? t.shape().str() : "undefined",
                    it->second->shape().str());
    }
    for (const auto& [name, t] : c.parameters)
      ATTNLAB_CHECK(seen.count(name) == 1, "{}: parameter '{}' has no Adam {}", label, name, which);
  }
}

const std::string& need(const std::map<std::string, std::string>& meta, const char* k,
                        const std::string& label) {
  auto it = meta.find(k);
  ATTNLAB_CHECK(it != meta.end(), "{} is not an attnlab checkpoint: metadata key '{}' is missing",
                label, k);
  return it->second;
}

std::int64_t parse_int(const std::string& text, const char* k, const std::string& label) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  ATTNLAB_CHECK(ec == std::errc() && ptr == end && !text.empty(),
                "{} is corrupt: metadata '{}' = '{}' is not an integer", label, k, text);
  return value;
}

json parse_json(const std::string& text, const char* k, const std::string& label) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{} is corrupt: metadata '{}' is not valid JSON ({})", label, k,
                            e.what()));
  }
}

template <typename T>
T get_field(const json& object, const char* field, const char* k, const std::string& label) {
  ATTNLAB_CHECK(object.is_object() && object.contains(field),
                "{} is corrupt: metadata '{}' has no field '{}'", label, k, field);
  try {
    return object[field].get<T>();
  } catch (const json::exception& e) {
    throw Error(fmt::format("{} is corrupt: field '{}' of metadata '{}' has the wrong type ({})",
                            label, field, k, e.what()));
  }
}

}  // namespace

const Tensor* Checkpoint::parameter(std::string_view name) const {
  for (const auto& p : parameters)
    if (p.name == name) return &p.tensor;
  return nullptr;
}

std::vector<NamedTensor> snapshot_parameters(const Module& module) {
  std::vector<NamedTensor> out;
  for (const auto& [name, t] : module.named_parameters()) {
    const Tensor host = t.detach().to(Device::cpu());
    out.push_back({name, host.same_storage(t) ? host.clone() : host});
  }
  return out;
}

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& c) {
  const std::string label = fmt::format("save_checkpoint '{}'", path.string());
  validate(c, label);
  std::vector<NamedTensor> tensors;
  tensors.reserve(c.parameters.size() + c.optimizer.m.size() + c.optimizer.v.size());
  for (const auto& p : c.parameters) tensors.push_back({p.name, p.tensor.to(Device::cpu())});
  // Moments in parameter order, whatever order the caller gave them in.
  for (const auto& [prefix, moments] :
       {std::pair{kOptimM, &c.optimizer.m}, std::pair{kOptimV, &c.optimizer.v}}) {
    if (moments->empty()) continue;
    for (const auto& p : c.parameters)
      for (const auto& mt : *moments)
        if (mt.name == p.name) tensors.push_back({prefix + p.name, mt.tensor.to(Device::cpu())});
  }

  json rng = json::object();
  for (const auto& [name, s] : c.rng) rng[name] = {{"seed", s.seed}, {"offset", s.offset}};
  const json optimizer = {{"kind", "adam"},
                          {"step", c.optimizer.step},
                          {"has_moments", !c.optimizer.m.empty()}};
  const json data = {{"epoch", c.data.epoch}, {"batch_index", c.data.batch_index}};
  std::map<std::string, std::string> meta = {
      {key::format_pt, "pt"},
      {key::format, kCheckpointFormat},
      {key::checksum, data_checksum(tensors)},
      {key::step, std::to_string(c.step)},
      {key::optimizer, optimizer.dump()},
      {key::rng, rng.dump()},
      {key::data_position, data.dump()},
      {key::config, c.config},
      {key::config_format, c.config_format},
      {key::plugins, c.plugins},
      {key::spm_model_hash, c.spm_model_hash},
      {key::version, c.attnlab_version},
  };
  write_safetensors(path, tensors, meta);
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  const std::string label = fmt::format("checkpoint '{}'", path.string());
  SafetensorsContent content = read_safetensors(path, label);
  const auto& meta = content.metadata;

  const std::string& format = need(meta, key::format, label);
  ATTNLAB_CHECK(format == kCheckpointFormat,
                "{} has format '{}', which this attnlab (reading '{}') does not know", label,
                format, kCheckpointFormat);
  const std::string& expected = need(meta, key::checksum, label);
  const std::string actual = data_checksum(content.tensors);
  ATTNLAB_CHECK(actual == expected,
                "{} is corrupt: checksum of the data section is {}, expected {} (from its "
                "header)",
                label, actual, expected);

  Checkpoint c;
  c.step = parse_int(need(meta, key::step, label), key::step, label);
  const json optimizer = parse_json(need(meta, key::optimizer, label), key::optimizer, label);
  c.optimizer.step = get_field<std::int64_t>(optimizer, "step", key::optimizer, label);
  const bool has_moments = get_field<bool>(optimizer, "has_moments", key::optimizer, label);
  const json rng = parse_json(need(meta, key::rng, label), key::rng, label);
  ATTNLAB_CHECK(rng.is_object(), "{} is corrupt: metadata '{}' is not a JSON object", label,
                key::rng);
  for (const auto& [name, s] : rng.items())
    c.rng[name] = {get_field<std::uint64_t>(s, "seed", key::rng, label),
                   get_field<std::uint64_t>(s, "offset", key::rng, label)};
  const json data = parse_json(need(meta, key::data_position, label), key::data_position, label);
  c.data.epoch = get_field<std::int64_t>(data, "epoch", key::data_position, label);
  c.data.batch_index = get_field<std::int64_t>(data, "batch_index", key::data_position, label);
  c.config = need(meta, key::config, label);
  c.config_format = need(meta, key::config_format, label);
  c.plugins = need(meta, key::plugins, label);
  c.spm_model_hash = need(meta, key::spm_model_hash, label);
  c.attnlab_version = need(meta, key::version, label);

  for (auto& [name, t] : content.tensors) {
    if (starts_with(name, kOptimM))
      c.optimizer.m.push_back({name.substr(std::strlen(kOptimM)), std::move(t)});
    else if (starts_with(name, kOptimV))
      c.optimizer.v.push_back({name.substr(std::strlen(kOptimV)), std::move(t)});
    else {
      ATTNLAB_CHECK(!starts_with(name, kOptimPrefix),
                    "{} is corrupt: unknown optimizer tensor '{}'", label, name);
      c.parameters.push_back({name, std::move(t)});
    }
  }
  ATTNLAB_CHECK(has_moments == !c.optimizer.m.empty(),
                "{} is corrupt: metadata says has_moments={} but it holds {} optim.m tensors",
                label, has_moments, c.optimizer.m.size());
  validate(c, label + " is corrupt");
  return c;
}

void apply_to_module(const Checkpoint& checkpoint, Module& module) {
  const auto params = module.named_parameters();
  std::vector<std::string> problems;
  std::set<std::string_view> module_names;
  std::vector<Tensor> converted;
  converted.reserve(params.size());
  for (const auto& [name, p] : params) {
    module_names.insert(name);
    const Tensor* src = checkpoint.parameter(name);
    if (src == nullptr) {
      problems.push_back(fmt::format("parameter '{}' (shape {}) is missing from the checkpoint",
                                     name, p.shape().str()));
    } else if (src->shape() != p.shape()) {
      problems.push_back(fmt::format("parameter '{}' has shape {} in the checkpoint but {} in the "
                                     "module",
                                     name, src->shape().str(), p.shape().str()));
    }
  }
  for (const auto& [name, t] : checkpoint.parameters)
    if (module_names.count(name) == 0)
      problems.push_back(fmt::format("checkpoint weight '{}' (shape {}) is not a parameter of the "
                                     "module",
                                     name, t.shape().str()));
  ATTNLAB_CHECK(problems.empty(),
                "apply_to_module: the checkpoint (step {}) does not fit the module, nothing was "
                "loaded: {}",
                checkpoint.step, fmt::join(problems, "; "));
  // Convert everything first, so that a failure here also leaves the module untouched.
  for (const auto& [name, p] : params)
    converted.push_back(checkpoint.parameter(name)->to(p.dtype()).to(p.device()));
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i].second;
    const Tensor& src = converted[i];
    if (p.device().is_cpu()) {
      if (p.nbytes() != 0 && !src.same_storage(p))
        std::memcpy(p.raw_data(), src.raw_data(), p.nbytes());
    } else {
      // No public device-to-device copy into existing storage: the parameter takes over the
      // converted tensor's storage (every handle to the parameter sees it).
      TensorImpl* impl = p.impl();
      const Tensor owned = src.same_storage(*checkpoint.parameter(params[i].first)) ? src.clone()
                                                                                   : src;
      impl->storage = owned.impl()->storage;
      impl->offset_bytes = owned.impl()->offset_bytes;
    }
  }
}

}  // namespace attnlab::nmt
