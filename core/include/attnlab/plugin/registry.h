#pragma once
// The registry: name-keyed factories for each plugin family. Registration is explicit (a
// plugin's register function calls add()); a duplicate name is an error naming both sources,
// and an unknown name is an error listing what the family has and where each came from.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/plugin/attention.h"
#include "attnlab/plugin/context.h"
#include "attnlab/plugin/dropout.h"
#include "attnlab/plugin/family.h"
#include "attnlab/plugin/feed_forward.h"
#include "attnlab/plugin/norm.h"
#include "attnlab/plugin/options.h"
#include "attnlab/plugin/positional.h"

namespace attnlab {

struct PluginInfo {
  PluginFamily family = PluginFamily::attention;
  std::string name;
  std::string version;
  std::string description;
  std::vector<OptionSpec> options;
  // Attention plugins: the devices, dtypes, head sizes and features they serve
  // (attnlab/plugin/attention_support.h checks a model against them). Other families ignore it.
  AttentionCapabilities capabilities;
  // Positional plugins: the hooks their part inside self-attention uses (attention_positions.h),
  // which the model's attention plugin must apply. Other families ignore it.
  PositionHooks positions{};
  std::string source = "built-in";  // the library file it was loaded from
};

template <typename T>
using PluginFactory = std::function<std::shared_ptr<T>(const BuildContext&)>;

class Registry {
 public:
  // The process-wide registry that loaded plugins register into.
  static Registry& global();

  void add_attention(PluginInfo info, PluginFactory<Attention> factory);
  void add_positional(PluginInfo info, PluginFactory<PositionalEncoding> factory);
  void add_ffn(PluginInfo info, PluginFactory<FeedForward> factory);
  void add_dropout(PluginInfo info, PluginFactory<Dropout> factory);
  void add_norm(PluginInfo info, PluginFactory<Norm> factory);

  // Builds a plugin; ctx.options must already be validated for it (see Options::with_defaults).
  std::shared_ptr<Attention> make_attention(const std::string& name, const BuildContext& ctx) const;
  std::shared_ptr<PositionalEncoding> make_positional(const std::string& name,
                                                      const BuildContext& ctx) const;
  std::shared_ptr<FeedForward> make_ffn(const std::string& name, const BuildContext& ctx) const;
  std::shared_ptr<Dropout> make_dropout(const std::string& name, const BuildContext& ctx) const;
  std::shared_ptr<Norm> make_norm(const std::string& name, const BuildContext& ctx) const;

  // Throws an Error listing the family's plugins (name and source) when `name` is unknown.
  const PluginInfo& find(PluginFamily family, const std::string& name) const;
  bool contains(PluginFamily family, const std::string& name) const;
  std::vector<PluginInfo> list() const;
  std::vector<PluginInfo> list(PluginFamily family) const;

  // The source recorded for plugins added from now on (set by the loader around a library's
  // register function).
  void set_current_source(std::string source) { current_source_ = std::move(source); }

 private:
  struct Entry {
    PluginInfo info;
    PluginFactory<Attention> attention;
    PluginFactory<PositionalEncoding> positional;
    PluginFactory<FeedForward> ffn;
    PluginFactory<Dropout> dropout;
    PluginFactory<Norm> norm;
  };
  void add(Entry entry);
  const Entry& entry(PluginFamily family, const std::string& name) const;
  std::vector<Entry> entries_;
  std::string current_source_ = "built-in";
};

}  // namespace attnlab
