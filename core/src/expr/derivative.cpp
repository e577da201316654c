// Reverse-mode differentiation of score_mod's result, written as more nodes of the same program:
// the adjoint of every real node that depends on `score` or on an element of a learned tensor,
// from the result down, by the rule of each op. Derivatives at the kinks follow the branch an
// op takes there (abs' (0) = 0; min and max give the tie to their first argument; the condition
// of a select picks the branch that receives the gradient); floor, ceil and sign have none.
#include <cstddef>

#include "expr/ir.h"

namespace attnlab::expr {
namespace {

class Builder {
 public:
  explicit Builder(Program& p) : p_(p) {}

  bool is_const(int n, double v) const {
    const Node& x = p_.nodes[static_cast<std::size_t>(n)];
    return x.op == Op::constant && x.type == Type::real && x.imm_real == v;
  }
  int node(Op op, std::vector<int> args) {
    Node n{op, Type::real};
    n.args = std::move(args);
    return p_.add(std::move(n));
  }
  int zero() { return p_.constant_real(0.0); }
  int add(int a, int b) { return a < 0 ? b : node(Op::add, {a, b}); }
  int neg(int a) { return node(Op::neg, {a}); }
  int mul(int a, int b) {
    if (is_const(a, 1.0)) return b;
    if (is_const(b, 1.0)) return a;
    return node(Op::mul, {a, b});
  }
  int div(int a, int b) { return node(Op::div, {a, b}); }
  int select(int c, int x, int y) {
    Node n{Op::select, Type::real};
    n.args = {c, x, y};
    return p_.add(std::move(n));
  }
  int compare(Op op, int a, int b) {
    Node n{op, Type::boolean};
    n.args = {a, b};
    return p_.add(std::move(n));
  }

 private:
  Program& p_;
};

}  // namespace

void differentiate(Program& p, const std::vector<bool>& learned) {
  if (p.score < 0) return;
  const std::size_t count = p.nodes.size();
  // Which nodes depend on a differentiable leaf: `score`, or an element of a learned tensor.
  std::vector<bool> depends(count, false);
  for (std::size_t k = 0; k < count; ++k) {
    const Node& n = p.nodes[k];
    if (n.type != Type::real) continue;
    if (n.op == Op::variable) depends[k] = n.var == Var::score;
    else if (n.op == Op::load) depends[k] = learned[static_cast<std::size_t>(n.tensor)];
    else if (n.op != Op::to_real)
      for (int a : n.args) depends[k] = depends[k] || depends[static_cast<std::size_t>(a)];
  }
  Builder b(p);
  std::vector<int> adj(count, -1);
  adj[static_cast<std::size_t>(p.score)] = p.constant_real(1.0);
  for (std::size_t k = count; k-- > 0;) {
    const int g = adj[k];
    if (g < 0 || !depends[k]) continue;
    // Copies: adding nodes may move p.nodes.
    const Node n = p.nodes[k];
    const int out = static_cast<int>(k);
    auto a = [&](int i) { return n.args[static_cast<std::size_t>(i)]; };
    auto give = [&](int i, int contribution) {
      const std::size_t target = static_cast<std::size_t>(a(i));
      if (!depends[target]) return;
      adj[target] = b.add(adj[target], contribution);
    };
    switch (n.op) {
      case Op::variable: p.d_score = g; break;
      case Op::load: p.d_loads.push_back({out, g}); break;
      case Op::neg: give(0, b.neg(g)); break;
      case Op::add:
        give(0, g);
        give(1, g);
        break;
      case Op::sub:
        give(0, g);
        if (depends[static_cast<std::size_t>(a(1))]) give(1, b.neg(g));
        break;
      case Op::mul:
        if (depends[static_cast<std::size_t>(a(0))]) give(0, b.mul(g, a(1)));
        if (depends[static_cast<std::size_t>(a(1))]) give(1, b.mul(g, a(0)));
        break;
      case Op::div:
        if (depends[static_cast<std::size_t>(a(0))]) give(0, b.div(g, a(1)));
        if (depends[static_cast<std::size_t>(a(1))]) give(1, b.neg(b.div(b.mul(g, out), a(1))));
        break;
      case Op::mod:  // a - floor(a / b) b
        give(0, g);
        if (depends[static_cast<std::size_t>(a(1))])
          give(1, b.neg(b.mul(g, b.node(Op::floor, {b.div(a(0), a(1))}))));
        break;
      case Op::select:
        if (depends[static_cast<std::size_t>(a(1))]) give(1, b.select(a(0), g, b.zero()));
        if (depends[static_cast<std::size_t>(a(2))]) give(2, b.select(a(0), b.zero(), g));
        break;
      case Op::abs: give(0, b.mul(g, b.node(Op::sign, {a(0)}))); break;
      case Op::min:
      case Op::max: {
        const int first = b.compare(n.op == Op::min ? Op::le : Op::ge, a(0), a(1));
        if (depends[static_cast<std::size_t>(a(0))]) give(0, b.select(first, g, b.zero()));
        if (depends[static_cast<std::size_t>(a(1))]) give(1, b.select(first, b.zero(), g));
        break;
      }
      case Op::exp: give(0, b.mul(g, out)); break;
      case Op::log: give(0, b.div(g, a(0))); break;
      case Op::sqrt: give(0, b.div(g, b.mul(p.constant_real(2.0), out))); break;
      case Op::tanh: give(0, b.mul(g, b.node(Op::sub, {p.constant_real(1.0), b.mul(out, out)}))); break;
      case Op::sigmoid: give(0, b.mul(g, b.mul(out, b.node(Op::sub, {p.constant_real(1.0), out})))); break;
      case Op::pow:
        if (depends[static_cast<std::size_t>(a(0))])
          give(0, b.mul(g, b.mul(a(1), b.node(Op::pow, {a(0), b.node(Op::sub, {a(1), p.constant_real(1.0)})}))));
        if (depends[static_cast<std::size_t>(a(1))]) give(1, b.mul(g, b.mul(out, b.node(Op::log, {a(0)}))));
        break;
      default: break;  // sign, floor, ceil: no gradient
    }
  }
  if (p.d_score < 0) p.d_score = p.constant_real(0.0);
}

}  // namespace attnlab::expr
