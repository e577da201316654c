// attnlab data synth: writes the built-in synthetic parallel corpus; attnlab data batches: what
// attnlab train trains on (data_batches.cpp).
#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/data/synthetic.h"

namespace attnlab::app {

int command_data(const Args& args) {
  if (!args.empty() && args[0] == "batches") return data_batches(Args(args.begin() + 1, args.end()));
  if (args.empty() || args[0] != "synth")
    throw Error("usage: attnlab data synth --out DIR [--train N] [--dev N] [--test N] [--seed S]\n"
                "       attnlab data batches EXPERIMENT.toml --steps N --out DIR");
  std::string out;
  std::int64_t train = 20000, dev = 500, test = 500, seed = 1;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) throw Error(fmt::format("{} needs a value", a));
    const std::string& v = args[++i];
    if (a == "--out") out = v;
    else if (a == "--train") train = std::stoll(v);
    else if (a == "--dev") dev = std::stoll(v);
    else if (a == "--test") test = std::stoll(v);
    else if (a == "--seed") seed = std::stoll(v);
    else throw Error(fmt::format("unknown option '{}' (options: --out, --train, --dev, --test, --seed)", a));
  }
  if (out.empty()) throw Error("attnlab data synth: --out DIR is required");
  nmt::write_synthetic_corpus(out, static_cast<std::size_t>(train), static_cast<std::size_t>(dev),
                              static_cast<std::size_t>(test), static_cast<std::uint64_t>(seed));
  fmt::print("wrote {} / {} / {} synthetic pairs to {}/{{train,dev,test}}.{{src,tgt}}\n", train, dev, test, out);
  return 0;
}

}  // namespace attnlab::app
