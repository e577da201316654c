// bench_bleu: corpus BLEU (13a, sacreBLEU defaults) of the 16 WMT17 EN->DE systems against the
// newstest2017 reference; prints the score and seconds per system and the total.
//
//   ./build/bin/bench_bleu [DIR]    DIR defaults to <source>/../shared/data/wmt17_ende_systems
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attnlab/error.h"
#include "attnlab/nmt/metrics/bleu.h"

namespace {

std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw attnlab::Error(fmt::format("cannot open {}", path.string()));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using clock = std::chrono::steady_clock;
  try {
    const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::path(ATTNLAB_BENCH_SHARED_DATA) / "wmt17_ende_systems";
    const fs::path ref_path = dir / "newstest2017-ende-ref.de";
    if (!fs::exists(ref_path)) {
      fmt::print(stderr, "bench_bleu: {} not found (pass the wmt17_ende_systems folder as the argument)\n",
                 ref_path.string());
      return 2;
    }
    std::vector<fs::path> systems;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("newstest2017.") && name.ends_with(".en-de")) systems.push_back(entry.path());
    }
    std::sort(systems.begin(), systems.end());
    const std::vector<std::vector<std::string>> refs = {read_lines(ref_path)};
    const attnlab::nmt::BleuConfig config;
    fmt::print("{}\n", attnlab::nmt::bleu_signature(config, 1));
    double total_seconds = 0;
    for (const fs::path& path : systems) {
      const std::vector<std::string> hyps = read_lines(path);  // reading is not timed
      const auto start = clock::now();
      const attnlab::nmt::BleuScore score = attnlab::nmt::corpus_bleu(hyps, refs, config);
      const double seconds = std::chrono::duration<double>(clock::now() - start).count();
      total_seconds += seconds;
      fmt::print("{:<42} {:.3f} s  {} [{:.15g}]\n", path.filename().string(), seconds, score.format(), score.score);
    }
    fmt::print("{} systems x {} segments: {:.3f} s in total, {:.3f} s per system\n", systems.size(), refs[0].size(),
               total_seconds, systems.empty() ? 0.0 : total_seconds / static_cast<double>(systems.size()));
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_bleu: {}\n", e.what());
    return 1;
  }
}
