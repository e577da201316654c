// The front end of score expressions: what builds, and every mistake caught before any kernel
// runs, each at its place in the file (file:line:column inside the string) and saying what is
// valid.
#include <doctest/doctest.h>

#include "expr/ir.h"
#include "expr_testing.h"

using namespace expr_testing;

TEST_CASE("the issue's example builds: a soft-capped score with a learned relative bias and a window with a sink") {
  const auto e = build("20 * tanh(score / 20) + bias[h, clamp(kv_idx - q_idx, -8, 8) + 8]",
                       "kv_idx == 0 || abs(q_idx - kv_idx) <= 6", {tensor("bias", {4, 17}, true)});
  CHECK(e->has_score_mod());
  CHECK(e->has_mask_mod());
  CHECK(e->learns());
  REQUIRE(e->tensors().size() == 1);
  CHECK(e->program().d_loads.size() == 1);
  CHECK(e->program().d_score >= 0);
}

TEST_CASE("only the tensors an expression reads are the site's; equal programs hash equally") {
  const auto a = build("score - slope[h] * abs(q_idx - kv_idx)", "", {tensor("bias", {4, 3}), tensor("slope", {4})});
  REQUIRE(a->tensors().size() == 1);
  CHECK(a->tensors()[0].name == "slope");
  CHECK_FALSE(a->learns());
  const auto b = build("score - slope[h] * abs(q_idx - kv_idx)", "", {tensor("slope", {4})});
  CHECK(a->hash() == b->hash());
  const auto c = build("score - slope[h] * abs(kv_idx - q_idx)", "", {tensor("slope", {4})});
  CHECK(a->hash() != c->hash());
}

TEST_CASE("common subexpressions are computed once") {
  const auto e = build("(kv_idx - q_idx) * (kv_idx - q_idx) + score");
  int subs = 0;
  for (const auto& n : e->program().nodes) subs += n.op == Op::sub;
  CHECK(subs == 1);
}

TEST_CASE("an unknown name lists the valid ones and suggests the nearest") {
  const std::string m = error_of("score + kvidx");
  CHECK(m.find("exp.toml:12:21: model.attention.score_mod: unknown name 'kvidx'") == 0);
  CHECK(m.find("names: score, b, h, q_idx, kv_idx, q_len, kv_len") != std::string::npos);
  CHECK(m.find("did you mean 'kv_idx'?") != std::string::npos);
  // The caret points at the name.
  CHECK(m.find("\n  score + kvidx\n          ^") != std::string::npos);
  CHECK(error_of("tanhh(score)").find("unknown function 'tanhh'") != std::string::npos);
  CHECK(error_of("tanhh(score)").find("did you mean 'tanh'?") != std::string::npos);
}

TEST_CASE("a mistake on a later line of a multi-line string is placed on that line") {
  const std::string m = error_of("score +\n  2 * kv_idx +\n  foo");
  CHECK(m.find("exp.toml:14:3: ") == 0);
}

TEST_CASE("type errors: a bool in arithmetic, a real index, a number where a bool is needed") {
  CHECK(error_of("score + (q_idx < kv_idx)").find("'+' needs numbers, got a bool on the right") != std::string::npos);
  const std::string m = error_of("score + bias[h, kv_idx / 2.0]", "", {tensor("bias", {4, 64})});
  CHECK(m.find("index 2 of 'bias' is real; indices are integers (int(x) converts") != std::string::npos);
  CHECK(error_of("score", "q_idx - kv_idx").find("mask_mod gives an integer; it must give a bool") !=
        std::string::npos);
  CHECK(error_of("q_idx > kv_idx").find("score_mod gives a bool") != std::string::npos);
  CHECK(error_of("score", "q_idx && kv_idx").find("'&&' needs bools, got integer on the left") != std::string::npos);
  CHECK(error_of("q_idx > 3 ? score : kv_idx > 2").find("both must be numbers or both bools") != std::string::npos);
  CHECK(error_of("score ? 1 : 0").find("the condition of '?' must be a bool, got real") != std::string::npos);
}

TEST_CASE("score is not available in mask_mod") {
  CHECK(error_of("", "score > 0").find("'score' is not available in mask_mod") != std::string::npos);
}

TEST_CASE("an index that can leave its tensor is refused, with its range, and a clamped one builds") {
  const std::string m = error_of("score + bias[h, kv_idx - q_idx + 8]", "", {tensor("bias", {4, 17})});
  CHECK(m.find("index 2 of 'bias' can leave its range [0, 16]: it ranges over [-55, 71]") != std::string::npos);
  CHECK(m.find("clamp it") != std::string::npos);
  CHECK(error_of("score + bias[h, clamp(kv_idx - q_idx, -8, 8) + 8]", "", {tensor("bias", {4, 17})}).empty());
  // A floor remainder is in [0, divisor).
  CHECK(error_of("score + bias[h, (kv_idx - q_idx) % 17]", "", {tensor("bias", {4, 17})}).empty());
  // The heads' dimension must hold every head.
  CHECK(error_of("score + temp[h]", "", {tensor("temp", {2})}).find("ranges over [0, 3]") != std::string::npos);
  // A real index converted with int() is proven through its range.
  CHECK(error_of("score + bias[h, int(log(1 + abs(kv_idx - q_idx)))]", "", {tensor("bias", {4, 5})}).empty());
}

TEST_CASE("indexing and calling: the wrong number of indices or arguments, a tensor called, a function indexed") {
  CHECK(error_of("score + bias[h]", "", {tensor("bias", {4, 17})}).find("'bias' has 2 dimensions (shape [4, 17]), "
                                                                        "indexed with 1") != std::string::npos);
  CHECK(error_of("score + bias", "", {tensor("bias", {4, 17})}).find("'bias' is a tensor of shape [4, 17]") !=
        std::string::npos);
  CHECK(error_of("clamp(score, 1)").find("clamp() takes 3 arguments, got 2") != std::string::npos);
  CHECK(error_of("bias(h)", "", {tensor("bias", {4})}).find("'bias' is a tensor: index it with [ ]") !=
        std::string::npos);
  CHECK(error_of("tanh[h]").find("'tanh' is a function: call it with ( )") != std::string::npos);
  CHECK(error_of("score + nope[h]").find("unknown tensor 'nope'") != std::string::npos);
}

TEST_CASE("syntax errors say what was expected where") {
  CHECK(error_of("(score + 1").find("expected ')' to close '('") != std::string::npos);
  CHECK(error_of("score +").find("the expression ends where a value is expected") != std::string::npos);
  CHECK(error_of("score = 1").find("'=' is not an operator here; compare with '=='") != std::string::npos);
  CHECK(error_of("score", "q_idx > 1 & kv_idx > 2").find("write '&&'") != std::string::npos);
  CHECK(error_of("score ^ 2").find("write pow(x, y)") != std::string::npos);
  CHECK(error_of("score 2").find("unexpected '2' after the expression") != std::string::npos);
  CHECK(error_of("1.2.3 + score").find("'1.2.3' is not a number") != std::string::npos);
}

TEST_CASE("integers: a divisor that can be 0 and a result that can leave 32 bits are refused") {
  CHECK(error_of("score", "q_idx / kv_idx == 0").find("the divisor of '/' can be 0: it ranges over [0, 63]") !=
        std::string::npos);
  CHECK(error_of("score", "q_idx / (kv_idx + 1) == 0").empty());
  CHECK(error_of("score", "b * b * b > 1").find("can leave 32 bits") != std::string::npos);
}

TEST_CASE("tensor declarations are checked: names, shapes, values, ALiBi's shape") {
  CHECK(error_of("score + score_t[h]", "", {tensor("score", {4})}).find("taken by a variable or function") !=
        std::string::npos);
  TensorSpec v = tensor("v", {4}, false, TensorInit::values);
  v.values = {1, 2, 3};
  CHECK(error_of("score + v[h]", "", {v}).find("3 values for shape [4], which holds 4") != std::string::npos);
  CHECK(error_of("score * s[h]", "", {tensor("s", {3}, false, TensorInit::alibi_slopes)})
            .find("init \"alibi_slopes\" needs shape [\"heads\"]") != std::string::npos);
  CHECK(error_of("score", "", {tensor("z", {0})}).find("has a size outside [1, 2^24]") != std::string::npos);
  CHECK(error_of("score + t[h]", "", {tensor("t", {4}), tensor("t", {4})}).find("declared twice") !=
        std::string::npos);
}
