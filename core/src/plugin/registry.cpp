#include "attnlab/plugin/registry.h"

#include "attnlab/error.h"
#include "attnlab/suggest.h"

namespace attnlab {

Registry& Registry::global() {
  static Registry registry;
  return registry;
}

void Registry::add(Entry entry) {
  entry.info.source = current_source_;
  ATTNLAB_CHECK(!entry.info.name.empty(), "a {} plugin was registered without a name",
                family_name(entry.info.family));
  for (const Entry& e : entries_) {
    ATTNLAB_CHECK(!(e.info.family == entry.info.family && e.info.name == entry.info.name),
                  "{} plugin '{}' is registered twice: by {} and by {}", family_name(e.info.family),
                  e.info.name, e.info.source, entry.info.source);
  }
  entries_.push_back(std::move(entry));
}

void Registry::add_attention(PluginInfo info, PluginFactory<Attention> factory) {
  info.family = PluginFamily::attention;
  const auto& devices = info.capabilities.devices;
  for (std::size_t i = 0; i < devices.size(); ++i)
    for (std::size_t j = i + 1; j < devices.size(); ++j)
      ATTNLAB_CHECK(devices[i].device != devices[j].device,
                    "attention plugin '{}' ({}) declares its {} capabilities twice", info.name, current_source_,
                    device_kind_name(devices[i].device));
  add({std::move(info), std::move(factory), {}, {}, {}, {}});
}
void Registry::add_positional(PluginInfo info, PluginFactory<PositionalEncoding> factory) {
  info.family = PluginFamily::positional;
  add({std::move(info), {}, std::move(factory), {}, {}, {}});
}
void Registry::add_ffn(PluginInfo info, PluginFactory<FeedForward> factory) {
  info.family = PluginFamily::ffn;
  add({std::move(info), {}, {}, std::move(factory), {}, {}});
}
void Registry::add_dropout(PluginInfo info, PluginFactory<Dropout> factory) {
  info.family = PluginFamily::dropout;
  add({std::move(info), {}, {}, {}, std::move(factory), {}});
}
void Registry::add_norm(PluginInfo info, PluginFactory<Norm> factory) {
  info.family = PluginFamily::norm;
  add({std::move(info), {}, {}, {}, {}, std::move(factory)});
}

const Registry::Entry& Registry::entry(PluginFamily family, const std::string& name) const {
  std::vector<std::string> known;
  for (const Entry& e : entries_) {
    if (e.info.family != family) continue;
    if (e.info.name == name) return e;
    known.push_back(e.info.name);
  }
  if (known.empty())
    throw Error(fmt::format("unknown {} plugin '{}': no {} plugins are loaded (check the plugin "
                            "search path: ATTNLAB_PLUGIN_PATH or the experiment's plugin_paths)",
                            family_name(family), name, family_name(family)));
  // The names only (`attnlab plugins` says which file each came from), and the closest one.
  throw Error(fmt::format("unknown {} plugin '{}' (valid: {}){}", family_name(family), name, fmt::join(known, ", "),
                          did_you_mean(name, known)));
}

const PluginInfo& Registry::find(PluginFamily family, const std::string& name) const {
  return entry(family, name).info;
}

bool Registry::contains(PluginFamily family, const std::string& name) const {
  for (const Entry& e : entries_)
    if (e.info.family == family && e.info.name == name) return true;
  return false;
}

std::vector<PluginInfo> Registry::list() const {
  std::vector<PluginInfo> out;
  for (const Entry& e : entries_) out.push_back(e.info);
  return out;
}

std::vector<PluginInfo> Registry::list(PluginFamily family) const {
  std::vector<PluginInfo> out;
  for (const Entry& e : entries_)
    if (e.info.family == family) out.push_back(e.info);
  return out;
}

std::shared_ptr<Attention> Registry::make_attention(const std::string& name,
                                                    const BuildContext& ctx) const {
  return entry(PluginFamily::attention, name).attention(ctx);
}
std::shared_ptr<PositionalEncoding> Registry::make_positional(const std::string& name,
                                                              const BuildContext& ctx) const {
  return entry(PluginFamily::positional, name).positional(ctx);
}
std::shared_ptr<FeedForward> Registry::make_ffn(const std::string& name, const BuildContext& ctx) const {
  return entry(PluginFamily::ffn, name).ffn(ctx);
}
std::shared_ptr<Dropout> Registry::make_dropout(const std::string& name, const BuildContext& ctx) const {
  return entry(PluginFamily::dropout, name).dropout(ctx);
}
std::shared_ptr<Norm> Registry::make_norm(const std::string& name, const BuildContext& ctx) const {
  return entry(PluginFamily::norm, name).norm(ctx);
}

std::shared_ptr<Dropout> BuildContext::make_dropout(double p, DropoutSite site) const {
  ATTNLAB_CHECK(registry != nullptr, "BuildContext::make_dropout: no registry in the context");
  BuildContext inner = *this;
  std::map<std::string, OptionValue> options = dropout_options;
  options["rate"] = p;
  inner.options = Options::with_defaults(registry->find(PluginFamily::dropout, dropout_plugin).options, options);
  inner.dropout_site = site;
  return registry->make_dropout(dropout_plugin, inner);
}

std::string_view dropout_site_name(DropoutSite site) {
  switch (site) {
    case DropoutSite::embedding: return "embedding";
    case DropoutSite::residual: return "residual";
    case DropoutSite::attention: return "attention";
    case DropoutSite::ffn: return "ffn";
  }
  return "unknown";
}

}  // namespace attnlab
