// The expression parser: a hand-written recursive descent over C's precedence levels,
//   ternary  or ('?' ternary ':' ternary)?
//   or       and ('||' and)*
//   and      equality ('&&' equality)*
//   equality relation (('==' | '!=') relation)*
//   relation sum (('<' | '<=' | '>' | '>=') sum)*
//   sum      product (('+' | '-') product)*
//   product  unary (('*' | '/' | '%') unary)*
//   unary    ('-' | '+' | '!') unary | primary
//   primary  number | true | false | name | name '[' args ']' | name '(' args ')' | '(' ternary ')'
// Numbers with a '.' or an exponent are real, others integers.
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "expr/ast.h"

namespace attnlab::expr {

[[noreturn]] void error_at(const ExprText& source, std::size_t offset, const std::string& message) {
  // The line and column of `offset` inside the text, then in the file.
  int line = 0, column = 0;
  std::size_t line_start = 0;
  for (std::size_t k = 0; k < offset && k < source.text.size(); ++k)
    if (source.text[k] == '\n') ++line, line_start = k + 1;
  column = static_cast<int>(offset - line_start);
  std::string where;
  if (source.spot.line > 0)
    where = fmt::format("{}:{}:{}: ", source.spot.file, source.spot.line + line,
                        (line == 0 ? source.spot.column : 1) + column);
  if (!source.spot.key.empty()) where += source.spot.key + ": ";
  std::size_t line_end = source.text.find('\n', line_start);
  if (line_end == std::string::npos) line_end = source.text.size();
  const std::string text = source.text.substr(line_start, line_end - line_start);
  throw ExprError(fmt::format("{}{}\n  {}\n  {}^", where, message, text, std::string(static_cast<std::size_t>(column), ' ')));
}

namespace {

struct Token {
  enum class Kind : std::uint8_t { end, number, name, op } kind;
  std::size_t offset;
  std::string text;
};

class Parser {
 public:
  explicit Parser(const ExprText& source) : source_(source), text_(source.text) { next(); }

  std::unique_ptr<Ast> expression() {
    auto e = ternary();
    if (token_.kind != Token::Kind::end) fail(token_.offset, fmt::format("unexpected '{}' after the expression", token_.text));
    return e;
  }

 private:
  [[noreturn]] void fail(std::size_t offset, const std::string& message) const { error_at(source_, offset, message); }

  void next() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    const std::size_t start = pos_;
    if (pos_ >= text_.size()) {
      token_ = {Token::Kind::end, start, "end of text"};
      return;
    }
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && pos_ + 1 < text_.size() &&
                                                         std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                                     ((text_[pos_] == '+' || text_[pos_] == '-') &&
                                      (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))))
        ++pos_;
      token_ = {Token::Kind::number, start, std::string(text_.substr(start, pos_ - start))};
      return;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      token_ = {Token::Kind::name, start, std::string(text_.substr(start, pos_ - start))};
      return;
    }
    static constexpr std::string_view kTwo[] = {"<=", ">=", "==", "!=", "&&", "||"};
    for (std::string_view op : kTwo)
      if (text_.substr(pos_, 2) == op) {
        pos_ += 2;
        token_ = {Token::Kind::op, start, std::string(op)};
        return;
      }
    static constexpr std::string_view kOne = "+-*/%<>!?:()[],";
    if (kOne.find(c) != std::string_view::npos) {
      ++pos_;
      token_ = {Token::Kind::op, start, std::string(1, c)};
      return;
    }
    if (c == '=') fail(start, "'=' is not an operator here; compare with '=='");
    if (c == '&' || c == '|') fail(start, fmt::format("'{}' alone is not an operator; write '{}{}'", c, c, c));
    if (c == '^') fail(start, "'^' is not an operator; write pow(x, y)");
    fail(start, fmt::format("unexpected character '{}'", c));
  }

  bool at(std::string_view op) const { return token_.kind == Token::Kind::op && token_.text == op; }
  void expect(std::string_view op, std::string_view what) {
    if (!at(op)) fail(token_.offset, fmt::format("expected '{}' {}, got '{}'", op, what, token_.text));
    next();
  }

  static std::unique_ptr<Ast> node(Ast::Kind kind, std::size_t offset, std::string text) {
    auto a = std::make_unique<Ast>();
    a->kind = kind;
    a->offset = offset;
    a->text = std::move(text);
    return a;
  }
  static std::unique_ptr<Ast> binary(std::string op, std::size_t offset, std::unique_ptr<Ast> l, std::unique_ptr<Ast> r) {
    auto a = node(Ast::Kind::binary, offset, std::move(op));
    a->args.push_back(std::move(l));
    a->args.push_back(std::move(r));
    return a;
  }

  std::unique_ptr<Ast> ternary() {
    auto c = logical_or();
    if (!at("?")) return c;
    const std::size_t offset = c->offset;
    next();
    auto x = ternary();
    expect(":", "between the branches of '?'");
    auto y = ternary();
    auto a = node(Ast::Kind::ternary, offset, "?");
    a->args.push_back(std::move(c));
    a->args.push_back(std::move(x));
    a->args.push_back(std::move(y));
    return a;
  }

  // One left-associative level: operands from `operand`, operators from `ops`.
  template <typename Next>
  std::unique_ptr<Ast> level(std::initializer_list<std::string_view> ops, Next operand) {
    auto l = (this->*operand)();
    for (;;) {
      bool matched = false;
      for (std::string_view op : ops)
        if (at(op)) {
          matched = true;
          const std::string text = token_.text;
          next();
          auto r = (this->*operand)();
          const std::size_t offset = l->offset;
          l = binary(text, offset, std::move(l), std::move(r));
          break;
        }
      if (!matched) return l;
    }
  }
  std::unique_ptr<Ast> logical_or() { return level({"||"}, &Parser::logical_and); }
  std::unique_ptr<Ast> logical_and() { return level({"&&"}, &Parser::equality); }
  std::unique_ptr<Ast> equality() { return level({"==", "!="}, &Parser::relation); }
  std::unique_ptr<Ast> relation() { return level({"<=", ">=", "<", ">"}, &Parser::sum); }
  std::unique_ptr<Ast> sum() { return level({"+", "-"}, &Parser::product); }
  std::unique_ptr<Ast> product() { return level({"*", "/", "%"}, &Parser::unary); }

  std::unique_ptr<Ast> unary() {
    if (at("-") || at("+") || at("!")) {
      auto a = node(Ast::Kind::unary, token_.offset, token_.text);
      next();
      a->args.push_back(unary());
      return a;
    }
    return primary();
  }

  std::vector<std::unique_ptr<Ast>> arguments(std::string_view close, std::string_view what) {
    std::vector<std::unique_ptr<Ast>> args;
    if (at(close)) {
      next();
      return args;
    }
    for (;;) {
      args.push_back(ternary());
      if (at(",")) {
        next();
        continue;
      }
      expect(close, what);
      return args;
    }
  }

  std::unique_ptr<Ast> number() {
    const std::string& t = token_.text;
    const bool real = t.find_first_of(".eE") != std::string::npos;
    const char* begin = t.c_str();
    char* end = nullptr;
    errno = 0;
    auto a = node(real ? Ast::Kind::real : Ast::Kind::integer, token_.offset, t);
    if (real) a->value_real = std::strtod(begin, &end);
    else a->value_int = std::strtoll(begin, &end, 10);
    if (end != begin + t.size()) fail(token_.offset, fmt::format("'{}' is not a number", t));
    if (errno == ERANGE || (!real && a->value_int > 2147483647))
      fail(token_.offset, fmt::format("the number {} is out of range{}", t, real ? "" : " (integers are 32-bit)"));
    next();
    return a;
  }

  std::unique_ptr<Ast> primary() {
    if (token_.kind == Token::Kind::number) return number();
    if (at("(")) {
      next();
      auto e = ternary();
      expect(")", "to close '('");
      return e;
    }
    if (token_.kind != Token::Kind::name) {
      if (token_.kind == Token::Kind::end) fail(token_.offset, "the expression ends where a value is expected");
      fail(token_.offset, fmt::format("expected a value, got '{}'", token_.text));
    }
    const std::size_t offset = token_.offset;
    std::string name = token_.text;
    next();
    if (name == "true" || name == "false") {
      auto a = node(Ast::Kind::boolean, offset, name);
      a->value_int = name == "true";
      return a;
    }
    if (at("(")) {
      next();
      auto a = node(Ast::Kind::call, offset, std::move(name));
      a->args = arguments(")", "to close the arguments");
      return a;
    }
    if (at("[")) {
      next();
      auto a = node(Ast::Kind::index, offset, std::move(name));
      a->args = arguments("]", "to close the indices");
      if (a->args.empty()) fail(offset, fmt::format("'{}[]' has no index", a->text));
      return a;
    }
    return node(Ast::Kind::name, offset, std::move(name));
  }

  const ExprText& source_;
  std::string_view text_;
  std::size_t pos_ = 0;
  Token token_{Token::Kind::end, 0, ""};
};

}  // namespace

std::unique_ptr<Ast> parse(const ExprText& source) {
  if (source.empty()) error_at(source, 0, "the expression is empty");
  return Parser(source).expression();
}

}  // namespace attnlab::expr
