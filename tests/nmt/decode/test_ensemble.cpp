// Ensembles: the combined log-probabilities by hand, an ensemble of one model twice decoding as
// the model alone, and two different models decoding with their averaged distributions.
#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/autograd.h"
#include "attnlab/nmt/decode/ensemble.h"
#include "attnlab/ops.h"
#include "nmt_testing.h"

using namespace attnlab;
using namespace attnlab::nmt;

TEST_CASE("an ensemble's log-probabilities are the members' averaged and renormalised") {
  const Tensor a = log_softmax(Tensor::from_vector<double>({2, 3}, {1.0, 2.0, 3.0, 0.0, 0.0, 5.0}));
  const Tensor b = log_softmax(Tensor::from_vector<double>({2, 3}, {3.0, 1.0, 0.5, 2.0, 2.0, -1.0}));
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  const auto got = combine_log_probs({a, b}).to_vector<double>();
  for (std::size_t r = 0; r < 2; ++r) {
    double z = 0.0;
    for (std::size_t c = 0; c < 3; ++c) z += std::exp(0.5 * (va[3 * r + c] + vb[3 * r + c]));
    double total = 0.0;
    for (std::size_t c = 0; c < 3; ++c) {
      CHECK(got[3 * r + c] == doctest::Approx(0.5 * (va[3 * r + c] + vb[3 * r + c]) - std::log(z)));
      total += std::exp(got[3 * r + c]);
    }
    CHECK(total == doctest::Approx(1.0));  // a distribution again
  }
  CHECK(combine_log_probs({a}).to_vector<double>() == va);  // one member is itself
  CHECK_THROWS_WITH_AS(combine_log_probs({a, log_softmax(Tensor::zeros({2, 4}, DType::f64))}),
                       doctest::Contains("member 1 gave log-probabilities [2, 4] but member 0 gave [2, 3]"), Error);
}

TEST_CASE("an ensemble of one model twice translates as the model alone, and two models by their averaged distribution") {
  TransformerConfig c = nmt::testing::tiny_config(11);
  Generator i1(3), d1(4), i2(9), d2(10);
  Transformer a(c, nmt::testing::plugins(), i1, d1), b(c, nmt::testing::plugins(), i2, d2);
  const std::vector<std::vector<std::int32_t>> sources = {{4, 5, 6}, {7, 8, 9, 10, 4}, {6}, {9, 9, 8}};
  const BeamOptions options{.beam = 3, .alpha = 0.6, .max_length_offset = 5, .n_best = 1};
  const auto alone = translate_ids(a, sources, options, 4096, Device::cpu());
  CHECK(translate_ids(std::vector<Transformer*>{&a, &a}, sources, options, 4096, Device::cpu()) == alone);
  // With greedy decoding the pair's first token is the argmax of the averaged log-probabilities.
  NoGradGuard no_grad;
  const BeamOptions greedy{.beam = 1, .alpha = 0.0, .max_length_offset = 5, .n_best = 1};
  const auto pair = translate_ids(std::vector<Transformer*>{&a, &b}, sources, greedy, 4096, Device::cpu());
  a.eval();
  b.eval();
  for (std::size_t s = 0; s < sources.size(); ++s) {
    std::vector<std::int64_t> src(sources[s].begin(), sources[s].end());
    const Tensor src_t = Tensor::from_vector<std::int64_t>({1, static_cast<std::int64_t>(src.size())}, src);
    const Tensor bos = Tensor::from_vector<std::int64_t>({1, 1}, {2});
    const Tensor mean = combine_log_probs({log_softmax(a.forward(src_t, bos).reshape({1, 11})),
                                           log_softmax(b.forward(src_t, bos).reshape({1, 11}))});
    const auto v = mean.to_vector<double>();
    std::int64_t best = 3;  // eos; padding (0) and bos (2) are never produced
    for (std::int64_t w = 1; w < 11; ++w)
      if (w != 2 && v[static_cast<std::size_t>(w)] > v[static_cast<std::size_t>(best)]) best = w;
    if (best == 3) CHECK(pair[s].empty());
    else CHECK((!pair[s].empty() && pair[s][0] == best));
  }
}
