#pragma once
// The syntax tree of one expression, as the parser reads it (parse.cpp), before names and types
// are checked (lower.cpp). Every node keeps the offset of its first character in the text, for
// the messages of the checks that follow.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/expr/score_expr.h"

namespace attnlab::expr {

struct Ast {
  enum class Kind : std::uint8_t {
    integer,   // `value_int`
    real,      // `value_real`
    boolean,   // `value_int` 0 or 1
    name,      // `text`: a variable or a constant (inf)
    index,     // `text`[args...]: a tensor element
    call,      // `text`(args...): a function
    unary,     // `text` in - ! +, args[0]
    binary,    // `text` an operator, args[0] op args[1]
    ternary,   // args[0] ? args[1] : args[2]
  };
  Kind kind;
  std::size_t offset;  // of the node's first character in the text
  std::string text;
  std::int64_t value_int = 0;
  double value_real = 0.0;
  std::vector<std::unique_ptr<Ast>> args;
};

// Parses `source.text` into a tree; a syntax error is an ExprError at its place (error_at).
std::unique_ptr<Ast> parse(const ExprText& source);

// The ExprError for `message` at `offset` of `source`: "file:line:column: key: message", then the
// expression's line with a caret under the place.
[[noreturn]] void error_at(const ExprText& source, std::size_t offset, const std::string& message);

}  // namespace attnlab::expr
