// attnlab data synth: writes the built-in synthetic parallel corpus; attnlab data batches: what
// attnlab train trains on (data_batches.cpp); attnlab data shapes: its batch shapes (data_shapes.cpp).
#include <memory>

#include <fmt/core.h>

#include "attnlab/commands.h"
#include "attnlab/error.h"
#include "attnlab/nmt/data/synthetic.h"

namespace attnlab::app {

Command data_synth_command(CLI::App& data) {
  struct Flags {
    std::string out;
    std::int64_t train = 20000, dev = 500, test = 500, seed = 1;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* app = data.add_subcommand("synth", "write the built-in synthetic parallel corpus");
  app->add_option("--out", f->out, "the folder for {train,dev,test}.{src,tgt}")->required()->type_name("DIR");
  app->add_option("--train", f->train, "training pairs")->check(whole_number(1))->type_name("N");
  app->add_option("--dev", f->dev, "dev pairs")->check(whole_number(1))->type_name("N");
  app->add_option("--test", f->test, "test pairs")->check(whole_number(1))->type_name("N");
  app->add_option("--seed", f->seed, "the generator's seed")->check(whole_number(0))->type_name("S");
  return {app, [f] {
            nmt::write_synthetic_corpus(f->out, static_cast<std::size_t>(f->train), static_cast<std::size_t>(f->dev),
                                        static_cast<std::size_t>(f->test), static_cast<std::uint64_t>(f->seed));
            fmt::print("wrote {} / {} / {} synthetic pairs to {}/{{train,dev,test}}.{{src,tgt}}\n", f->train, f->dev,
                       f->test, f->out);
            return 0;
          }};
}

}  // namespace attnlab::app
