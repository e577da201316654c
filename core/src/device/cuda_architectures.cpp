#include "device/cuda_architectures.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "attnlab/error.h"

namespace attnlab {
namespace {

struct Architecture {
  int number = 0;  // 80 for sm_80
  bool real = false, virtual_ = false;
  bool exact = false;  // "90a": device code for exactly that compute capability
};

// The entries of a CMake list; "," separates them too (the build passes the list that way, as a
// ';' would split the compile definition).
std::vector<std::string_view> entries(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const auto cut = list.find_first_of(";,");
    const std::string_view entry = list.substr(0, cut);
    if (!entry.empty()) out.push_back(entry);
    if (cut == std::string_view::npos) break;
    list.remove_prefix(cut + 1);
  }
  return out;
}

Architecture parse(std::string_view entry) {
  Architecture a;
  const char* end = entry.data() + entry.size();
  const auto [rest, ec] = std::from_chars(entry.data(), end, a.number);
  const std::string_view suffix(rest, static_cast<std::size_t>(end - rest));
  ATTNLAB_CHECK(ec == std::errc() && a.number > 0, "CUDA architectures: cannot read '{}'", entry);
  // 90a: device code for exactly that architecture; 100f: for its family (same major, at or above).
  a.exact = suffix.starts_with("a");
  const std::string_view features = suffix.starts_with("a") || suffix.starts_with("f") ? suffix.substr(1) : suffix;
  if (features == "-real") a.real = true;
  else if (features == "-virtual") a.virtual_ = true;
  else if (features.empty()) a.real = a.virtual_ = true;
  else throw Error(fmt::format("CUDA architectures: cannot read '{}'", entry));
  return a;
}

bool covers_everything(std::string_view list) {
  for (std::string_view e : entries(list))
    if (e == "all" || e == "all-major" || e == "native") return true;
  return false;
}

}  // namespace

std::string cuda_architectures_text(std::string_view architectures) {
  if (covers_everything(architectures)) return std::string(architectures);
  std::string text;
  for (std::string_view e : entries(architectures)) {
    const Architecture a = parse(e);
    const std::string_view tail = e.substr(std::to_string(a.number).size());
    const std::string_view feature = tail.starts_with("a") ? "a" : tail.starts_with("f") ? "f" : "";
    if (a.real) text += fmt::format("{}sm_{}{}", text.empty() ? "" : ", ", a.number, feature);
    if (a.virtual_) text += fmt::format("{}compute_{}", text.empty() ? "" : ", ", a.number);
  }
  return text;
}

std::string cuda_build_refusal(std::string_view architectures, int major, int minor) {
  if (covers_everything(architectures)) return {};
  const int device = major * 10 + minor;
  for (std::string_view e : entries(architectures)) {
    const Architecture a = parse(e);
    if (a.real && (a.exact ? a.number == device : a.number / 10 == major && a.number <= device)) return {};
    if (a.virtual_ && a.number <= device) return {};
  }
  return fmt::format("its compute capability is {}.{} (sm_{}), and this build's kernels are compiled for {} "
                     "only (reconfigure with -DCMAKE_CUDA_ARCHITECTURES={}-real;... to add it)",
                     major, minor, device, cuda_architectures_text(architectures), device);
}

}  // namespace attnlab
