#include "expr/codegen.h"

#include <cmath>

#include <fmt/format.h>

namespace attnlab::expr {
namespace {

std::string real_literal(double v, const Dialect& d) {
  if (std::isinf(v)) return v > 0 ? fmt::format("ax_inf(({})0)", d.real) : fmt::format("(-ax_inf(({})0))", d.real);
  if (std::isnan(v)) return fmt::format("ax_nan(({})0)", d.real);
  return fmt::format("(({}){:a})", d.real, v);
}

std::string call(const char* f, const std::string& a) { return fmt::format("{}({})", f, a); }

}  // namespace

std::string value_of(const Program& p, int n, const Dialect& d) {
  const Node& node = p.nodes[static_cast<std::size_t>(n)];
  if (node.op == Op::constant)
    return node.type == Type::real ? real_literal(node.imm_real, d) : fmt::format("({})", node.imm_int);
  if (node.op == Op::variable) return var_name(node.var);
  return fmt::format("v{}", n);
}

std::string offset_of(int n) { return fmt::format("o{}", n); }

std::string emit_nodes(const Program& p, const std::vector<bool>& emit, std::vector<bool>& done,
                       const std::vector<TensorSpec>& tensors, const Dialect& d, const std::string& indent) {
  std::string out;
  for (std::size_t k = 0; k < p.nodes.size(); ++k) {
    if (!emit[k] || done[k]) continue;
    done[k] = true;
    const Node& n = p.nodes[k];
    if (n.op == Op::constant || n.op == Op::variable) continue;
    auto a = [&](int i) { return value_of(p, n.args[static_cast<std::size_t>(i)], d); };
    const bool real = n.type == Type::real;
    const bool real_args = !n.args.empty() && n.op != Op::select &&
                           p.nodes[static_cast<std::size_t>(n.args[0])].type == Type::real;
    std::string e;
    switch (n.op) {
      case Op::load: {
        const TensorSpec& t = tensors[static_cast<std::size_t>(n.tensor)];
        std::string offset = a(0);
        for (std::size_t dim = 1; dim < n.args.size(); ++dim)
          offset = fmt::format("({}) * {} + {}", offset, t.shape[dim], a(static_cast<int>(dim)));
        out += fmt::format("{}const int {} = {};\n", indent, offset_of(static_cast<int>(k)), offset);
        e = fmt::format("t{}[{}]", n.tensor, offset_of(static_cast<int>(k)));
        break;
      }
      case Op::to_real: e = fmt::format("(({}){})", d.real, a(0)); break;
      case Op::to_int: e = call("ax_to_int", a(0)); break;
      case Op::neg: e = fmt::format("(-{})", a(0)); break;
      case Op::logical_not: e = fmt::format("({} ^ 1)", a(0)); break;
      case Op::add: e = fmt::format("({} + {})", a(0), a(1)); break;
      case Op::sub: e = fmt::format("({} - {})", a(0), a(1)); break;
      case Op::mul: e = fmt::format("({} * {})", a(0), a(1)); break;
      case Op::div: e = real ? fmt::format("({} / {})", a(0), a(1)) : fmt::format("ax_div({}, {})", a(0), a(1)); break;
      case Op::mod: e = real ? fmt::format("ax_fmod({}, {})", a(0), a(1)) : fmt::format("ax_mod({}, {})", a(0), a(1)); break;
      case Op::lt: e = fmt::format("(int)({} < {})", a(0), a(1)); break;
      case Op::le: e = fmt::format("(int)({} <= {})", a(0), a(1)); break;
      case Op::gt: e = fmt::format("(int)({} > {})", a(0), a(1)); break;
      case Op::ge: e = fmt::format("(int)({} >= {})", a(0), a(1)); break;
      case Op::eq: e = fmt::format("(int)({} == {})", a(0), a(1)); break;
      case Op::ne: e = fmt::format("(int)({} != {})", a(0), a(1)); break;
      case Op::logical_and: e = fmt::format("({} & {})", a(0), a(1)); break;
      case Op::logical_or: e = fmt::format("({} | {})", a(0), a(1)); break;
      case Op::select: e = fmt::format("({} ? {} : {})", a(0), a(1), a(2)); break;
      case Op::abs: e = real_args ? call("ax_abs", a(0)) : fmt::format("({0} < 0 ? -{0} : {0})", a(0)); break;
      case Op::sign: e = real_args ? call("ax_sign", a(0)) : fmt::format("(({0} > 0) - ({0} < 0))", a(0)); break;
      case Op::min: e = fmt::format("({0} <= {1} ? {0} : {1})", a(0), a(1)); break;
      case Op::max: e = fmt::format("({0} >= {1} ? {0} : {1})", a(0), a(1)); break;
      case Op::exp: e = call("ax_exp", a(0)); break;
      case Op::log: e = call("ax_log", a(0)); break;
      case Op::sqrt: e = call("ax_sqrt", a(0)); break;
      case Op::tanh: e = call("ax_tanh", a(0)); break;
      case Op::sigmoid: e = call("ax_sigmoid", a(0)); break;
      case Op::floor: e = call("ax_floor", a(0)); break;
      case Op::ceil: e = call("ax_ceil", a(0)); break;
      case Op::pow: e = fmt::format("ax_pow({}, {})", a(0), a(1)); break;
      default: break;
    }
    out += fmt::format("{}const {} v{} = {};\n", indent, real ? d.real : "int", k, e);
  }
  return out;
}

std::string helpers(const Dialect& d) {
  const std::string q = d.cuda ? "static __device__ __forceinline__" : "static inline";
  std::string out = fmt::format(R"(
{0} int ax_div(int a, int b) {{ const int q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }}
{0} int ax_mod(int a, int b) {{ return a - ax_div(a, b) * b; }}
)", q);
  // The real functions for float and double: CUDA's math functions; on the CPU the C library's for
  // double, and for float the branch-free ones of cpu/vector_math.h, so that the tile loops
  // vectorize (pow stays the C library's).
  for (const char* t : {"float", "double"}) {
    const bool f = std::string(t) == "float";
    auto fn = [&](const char* name) {
      const bool vector_math = !d.cuda && f && (std::string(name) == "exp" || std::string(name) == "log" ||
                                                std::string(name) == "tanh");
      if (vector_math) return fmt::format("attnlab_vm_{}", name);
      return fmt::format("{}{}", name, f ? "f" : "");
    };
    const std::string sigmoid = !d.cuda && f ? "attnlab_vm_sigmoid(x)" : fmt::format("({0})1 / (({0})1 + {1}(-x))", t, fn("exp"));
    out += fmt::format(R"(
{0} {1} ax_exp({1} x) {{ return {2}(x); }}
{0} {1} ax_log({1} x) {{ return {3}(x); }}
{0} {1} ax_sqrt({1} x) {{ return {4}(x); }}
{0} {1} ax_tanh({1} x) {{ return {5}(x); }}
{0} {1} ax_floor({1} x) {{ return {6}(x); }}
{0} {1} ax_ceil({1} x) {{ return {7}(x); }}
{0} {1} ax_pow({1} x, {1} y) {{ return {8}(x, y); }}
{0} {1} ax_abs({1} x) {{ return {9}(x); }}
{0} {1} ax_fmod({1} a, {1} b) {{ return a - {6}(a / b) * b; }}
{0} {1} ax_sign({1} x) {{ return ({1})((x > ({1})0) - (x < ({1})0)); }}
{0} {1} ax_sigmoid({1} x) {{ return {10}; }}
{0} int ax_to_int({1} x) {{
  if (!(x == x)) return 0;
  if (x >= ({1})2147483647.0) return 2147483647;
  if (x <= ({1})-2147483648.0) return -2147483647 - 1;
  return (int)x;
}}
{0} {1} ax_inf({1}) {{ return ({1}){11}; }}
{0} {1} ax_nan({1}) {{ return ({1}){12}; }}
)",
                       q, t, fn("exp"), fn("log"), fn("sqrt"), fn("tanh"), fn("floor"), fn("ceil"), fn("pow"),
                       fn("fabs"), sigmoid, d.cuda ? "__int_as_float(0x7f800000)" : "__builtin_inf()",
                       d.cuda ? "__int_as_float(0x7fc00000)" : "__builtin_nan(\"\")");
  }
  return out;
}

}  // namespace attnlab::expr
