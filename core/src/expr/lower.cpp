// Names and types of an expression's tree, checked while it is lowered to program nodes
// (ir.h): the variables a site offers, the declared tensors (indexed by as many integer
// expressions as they have dimensions, each proven inside its dimension over the site's
// limits), the functions and their arguments, the operators' operand types, and integers that
// could leave 32 bits. Every mistake is an ExprError at its place in the text.
#include "expr/lower.h"

#include <algorithm>
#include <cmath>

#include "attnlab/suggest.h"

namespace attnlab::expr {
namespace {

struct Function {
  const char* name;
  int min_args, max_args;
};
constexpr Function kFunctions[] = {
    {"abs", 1, 1},  {"sign", 1, 1}, {"min", 2, 8},     {"max", 2, 8},   {"clamp", 3, 3}, {"exp", 1, 1},
    {"log", 1, 1},  {"sqrt", 1, 1}, {"tanh", 1, 1},    {"sigmoid", 1, 1}, {"floor", 1, 1}, {"ceil", 1, 1},
    {"pow", 2, 2},  {"int", 1, 1},  {"float", 1, 1},
};

const Function* find_function(const std::string& name) {
  for (const Function& f : kFunctions)
    if (name == f.name) return &f;
  return nullptr;
}

std::string range_text(const Interval& r) {
  auto end = [](double x) {
    if (std::isinf(x)) return std::string(x < 0 ? "-inf" : "inf");
    return fmt::format("{}", x);
  };
  return fmt::format("[{}, {}]", end(r.lo), end(r.hi));
}

class Lowering {
 public:
  Lowering(Program& program, const ExprText& source, const std::vector<TensorSpec>& tensors, const Limits& limits,
           bool with_score)
      : p_(program), source_(source), tensors_(tensors), limits_(limits), with_score_(with_score),
        ranges_(static_ranges(limits)) {}

  int lower(const Ast& a) {
    switch (a.kind) {
      case Ast::Kind::integer: return p_.constant_int(a.value_int);
      case Ast::Kind::real: return p_.constant_real(a.value_real);
      case Ast::Kind::boolean: {
        Node n{Op::constant, Type::boolean};
        n.imm_int = a.value_int;
        return p_.add(std::move(n));
      }
      case Ast::Kind::name: return name(a);
      case Ast::Kind::index: return index(a);
      case Ast::Kind::call: return call(a);
      case Ast::Kind::unary: return unary(a);
      case Ast::Kind::binary: return binary(a);
      case Ast::Kind::ternary: return ternary(a);
    }
    fail(a, "unknown syntax");
  }

  Type type(int n) const { return p_.nodes[static_cast<std::size_t>(n)].type; }

  // `n` as a real (integers are converted).
  int real(int n) {
    if (type(n) == Type::real) return n;
    Node c{Op::to_real, Type::real};
    c.args = {n};
    return p_.add(std::move(c));
  }

  [[noreturn]] void fail(const Ast& a, const std::string& message) const { error_at(source_, a.offset, message); }

 private:
  int node(Op op, Type t, std::vector<int> args, const Ast& at) {
    Node n{op, t};
    n.args = std::move(args);
    const int id = p_.add(std::move(n));
    if (t == Type::integer) check_int_range(id, at);
    return id;
  }

  Interval range(int n) const { return intervals(p_, ranges_)[static_cast<std::size_t>(n)]; }

  void check_int_range(int n, const Ast& at) const {
    const Interval r = range(n);
    if (r.lo < -2147483648.0 || r.hi > 2147483647.0)
      fail(at, fmt::format("this integer expression can leave 32 bits: it ranges over {} for h in [0, {}], q_idx and "
                           "kv_idx in [0, {}], b below 2^24",
                           range_text(r), limits_.heads - 1, limits_.max_length - 1));
  }

  std::vector<std::string> names() const {
    std::vector<std::string> all = variable_names(with_score_);
    for (const auto& t : tensors_) all.push_back(t.name);
    all.push_back("inf");
    return all;
  }

  int name(const Ast& a) {
    for (int v = 0; v < kVarCount; ++v)
      if (a.text == var_name(static_cast<Var>(v))) {
        if (v == 0 && !with_score_)
          fail(a, "'score' is not available in mask_mod, which decides from positions alone (use score_mod "
                  "for a condition on the score)");
        Node n{Op::variable, v == 0 ? Type::real : Type::integer};
        n.var = static_cast<Var>(v);
        return p_.add(std::move(n));
      }
    if (a.text == "inf") return p_.constant_real(std::numeric_limits<double>::infinity());
    for (const auto& t : tensors_)
      if (t.name == a.text)
        fail(a, fmt::format("'{}' is a tensor of shape {}: index it, e.g. {}[{}]", t.name, t.shape_text(), t.name,
                            t.shape.size() == 1 ? "h" : "h, ..."));
    if (find_function(a.text)) fail(a, fmt::format("'{}' is a function: call it, e.g. {}(x)", a.text, a.text));
    unknown(a, "name");
  }

  [[noreturn]] void unknown(const Ast& a, const char* what) const {
    std::vector<std::string> valid = names();
    for (const Function& f : kFunctions) valid.push_back(f.name);
    std::vector<std::string> functions;
    for (const Function& f : kFunctions) functions.push_back(f.name);
    fail(a, fmt::format("unknown {} '{}' (names: {}; functions: {}){}", what, a.text, fmt::join(names(), ", "),
                        fmt::join(functions, ", "), did_you_mean(a.text, valid)));
  }

  int index(const Ast& a) {
    auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const TensorSpec& t) { return t.name == a.text; });
    if (it == tensors_.end()) {
      if (find_function(a.text)) fail(a, fmt::format("'{}' is a function: call it with ( ), not [ ]", a.text));
      for (int v = 0; v < kVarCount; ++v)
        if (a.text == var_name(static_cast<Var>(v))) fail(a, fmt::format("'{}' is a variable, not a tensor", a.text));
      unknown(a, "tensor");
    }
    const TensorSpec& t = *it;
    if (a.args.size() != t.shape.size())
      fail(a, fmt::format("'{}' has {} dimension{} (shape {}), indexed with {}", t.name, t.shape.size(),
                          t.shape.size() == 1 ? "" : "s", t.shape_text(), a.args.size()));
    Node n{Op::load, Type::real};
    n.tensor = static_cast<int>(it - tensors_.begin());
    for (std::size_t d = 0; d < a.args.size(); ++d) {
      const Ast& e = *a.args[d];
      const int i = lower(e);
      if (type(i) != Type::integer)
        fail(e, fmt::format("index {} of '{}' is {}; indices are integers{}", d + 1, t.name, type_name(type(i)),
                            type(i) == Type::real ? " (int(x) converts a real, toward zero)" : ""));
      const Interval r = range(i);
      const double top = static_cast<double>(t.shape[d] - 1);
      if (r.lo < 0.0 || r.hi > top)
        fail(e, fmt::format("index {} of '{}' can leave its range [0, {}]: it ranges over {} for h in [0, {}], q_idx "
                            "and kv_idx in [0, {}] (model.max_length {}); clamp it, e.g. clamp(..., 0, {})",
                            d + 1, t.name, t.shape[d] - 1, range_text(r), limits_.heads - 1, limits_.max_length - 1,
                            limits_.max_length, t.shape[d] - 1));
      n.args.push_back(i);
    }
    return p_.add(std::move(n));
  }

  // Both operands as numbers of one type (integer only when both are), or an error naming `op`.
  std::pair<int, int> numbers(const Ast& a, int l, int r, const std::string& op) {
    if (type(l) == Type::boolean || type(r) == Type::boolean)
      fail(type(l) == Type::boolean ? *a.args[0] : *a.args[1],
           fmt::format("'{}' needs numbers, got a bool on the {} (a comparison or a mask; use c ? x : y to turn "
                       "a bool into a number)",
                       op, type(l) == Type::boolean ? "left" : "right"));
    if (type(l) == Type::real || type(r) == Type::real) return {real(l), real(r)};
    return {l, r};
  }

  int unary(const Ast& a) {
    const int x = lower(*a.args[0]);
    if (a.text == "!") {
      if (type(x) != Type::boolean)
        fail(*a.args[0], fmt::format("'!' needs a bool, got {} (compare it: x == 0)", type_name(type(x))));
      return node(Op::logical_not, Type::boolean, {x}, a);
    }
    if (type(x) == Type::boolean) fail(*a.args[0], fmt::format("unary '{}' needs a number, got a bool", a.text));
    return a.text == "-" ? node(Op::neg, type(x), {x}, a) : x;
  }

  int binary(const Ast& a) {
    const std::string& op = a.text;
    const int l = lower(*a.args[0]);
    const int r = lower(*a.args[1]);
    if (op == "&&" || op == "||") {
      for (int k = 0; k < 2; ++k)
        if (type(k == 0 ? l : r) != Type::boolean)
          fail(*a.args[static_cast<std::size_t>(k)],
               fmt::format("'{}' needs bools, got {} on the {} (compare it: x != 0)", op, type_name(type(k == 0 ? l : r)),
                           k == 0 ? "left" : "right"));
      return node(op == "&&" ? Op::logical_and : Op::logical_or, Type::boolean, {l, r}, a);
    }
    static const std::pair<const char*, Op> kCompare[] = {{"<", Op::lt}, {"<=", Op::le}, {">", Op::gt},
                                                          {">=", Op::ge}, {"==", Op::eq}, {"!=", Op::ne}};
    for (const auto& [text, cmp] : kCompare)
      if (op == text) {
        if ((cmp == Op::eq || cmp == Op::ne) && type(l) == Type::boolean && type(r) == Type::boolean)
          return node(cmp, Type::boolean, {l, r}, a);
        const auto [x, y] = numbers(a, l, r, op);
        return node(cmp, Type::boolean, {x, y}, a);
      }
    static const std::pair<const char*, Op> kArith[] = {{"+", Op::add}, {"-", Op::sub}, {"*", Op::mul},
                                                        {"/", Op::div}, {"%", Op::mod}};
    for (const auto& [text, arith] : kArith)
      if (op == text) {
        const auto [x, y] = numbers(a, l, r, op);
        if ((arith == Op::div || arith == Op::mod) && type(x) == Type::integer) {
          const Interval d = range(y);
          if (d.lo <= 0.0 && d.hi >= 0.0)
            fail(*a.args[1], fmt::format("the divisor of '{}' can be 0: it ranges over {}", op, range_text(d)));
        }
        return node(arith, type(x), {x, y}, a);
      }
    fail(a, fmt::format("unknown operator '{}'", op));
  }

  int ternary(const Ast& a) {
    const int c = lower(*a.args[0]);
    if (type(c) != Type::boolean)
      fail(*a.args[0], fmt::format("the condition of '?' must be a bool, got {} (compare it: x != 0)", type_name(type(c))));
    int x = lower(*a.args[1]);
    int y = lower(*a.args[2]);
    if ((type(x) == Type::boolean) != (type(y) == Type::boolean))
      fail(a, fmt::format("the branches of '?' are {} and {}; both must be numbers or both bools", type_name(type(x)),
                          type_name(type(y))));
    if (type(x) != type(y)) x = real(x), y = real(y);
    return node(Op::select, type(x), {c, x, y}, a);
  }

  int call(const Ast& a) {
    const Function* f = find_function(a.text);
    if (!f) {
      if (std::any_of(tensors_.begin(), tensors_.end(), [&](const TensorSpec& t) { return t.name == a.text; }))
        fail(a, fmt::format("'{}' is a tensor: index it with [ ], not ( )", a.text));
      unknown(a, "function");
    }
    const int n = static_cast<int>(a.args.size());
    if (n < f->min_args || n > f->max_args)
      fail(a, fmt::format("{}() takes {} argument{}, got {}", f->name,
                          f->min_args == f->max_args ? fmt::format("{}", f->min_args)
                                                     : fmt::format("{} to {}", f->min_args, f->max_args),
                          f->max_args == 1 ? "" : "s", n));
    std::vector<int> args;
    for (const auto& e : a.args) {
      args.push_back(lower(*e));
      if (type(args.back()) == Type::boolean)
        fail(*e, fmt::format("{}() needs numbers, got a bool (use c ? x : y to turn a bool into a number)", f->name));
    }
    const std::string name = f->name;
    const bool all_int = std::all_of(args.begin(), args.end(), [&](int x) { return type(x) == Type::integer; });
    auto same_type = [&]() {
      if (!all_int)
        for (int& x : args) x = real(x);
    };
    const Type t = all_int ? Type::integer : Type::real;
    if (name == "abs" || name == "sign") return node(name == "abs" ? Op::abs : Op::sign, t, {args[0]}, a);
    if (name == "min" || name == "max") {
      same_type();
      int acc = args[0];
      for (std::size_t k = 1; k < args.size(); ++k) acc = node(name == "min" ? Op::min : Op::max, t, {acc, args[k]}, a);
      return acc;
    }
    if (name == "clamp") {
      same_type();
      return node(Op::min, t, {node(Op::max, t, {args[0], args[1]}, a), args[2]}, a);
    }
    if (name == "floor" || name == "ceil") {
      if (all_int) return args[0];
      return node(name == "floor" ? Op::floor : Op::ceil, Type::real, {args[0]}, a);
    }
    if (name == "int") {
      if (all_int) return args[0];
      return node(Op::to_int, Type::integer, {args[0]}, a);
    }
    if (name == "float") return real(args[0]);
    if (name == "pow") return node(Op::pow, Type::real, {real(args[0]), real(args[1])}, a);
    static const std::pair<const char*, Op> kReal[] = {{"exp", Op::exp},   {"log", Op::log},
                                                       {"sqrt", Op::sqrt}, {"tanh", Op::tanh},
                                                       {"sigmoid", Op::sigmoid}};
    for (const auto& [text, op] : kReal)
      if (name == text) return node(op, Type::real, {real(args[0])}, a);
    fail(a, fmt::format("unknown function '{}'", name));
  }

  Program& p_;
  const ExprText& source_;
  const std::vector<TensorSpec>& tensors_;
  const Limits& limits_;
  bool with_score_;
  VarRanges ranges_;
};

}  // namespace

std::vector<std::string> variable_names(bool with_score) {
  std::vector<std::string> names;
  for (int v = with_score ? 0 : 1; v < kVarCount; ++v) names.push_back(var_name(static_cast<Var>(v)));
  return names;
}

std::vector<std::string> function_names() {
  std::vector<std::string> names;
  for (const Function& f : kFunctions) names.push_back(f.name);
  return names;
}

int lower_score_mod(Program& program, const ExprText& source, const std::vector<TensorSpec>& tensors,
                    const Limits& limits) {
  const auto tree = parse(source);
  Lowering l(program, source, tensors, limits, true);
  const int result = l.lower(*tree);
  if (l.type(result) == Type::boolean)
    l.fail(*tree, "score_mod gives a bool; it must give the score (a number). A condition that removes scores "
                  "belongs in mask_mod");
  return l.real(result);
}

int lower_mask_mod(Program& program, const ExprText& source, const std::vector<TensorSpec>& tensors,
                   const Limits& limits) {
  const auto tree = parse(source);
  Lowering l(program, source, tensors, limits, false);
  const int result = l.lower(*tree);
  if (l.type(result) != Type::boolean)
    l.fail(*tree, fmt::format("mask_mod gives {}; it must give a bool, true where the score is kept (e.g. "
                              "abs(q_idx - kv_idx) <= 64)",
                              type_name(l.type(result)) == std::string("real") ? "a real" : "an integer"));
  return result;
}

}  // namespace attnlab::expr
