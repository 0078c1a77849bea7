//===- tile/verify.cpp - The rules every tile op obeys --------------------===//
//
// verify_tile (tile/passes.h): SSA (each value defined once, every operand
// defined before its use in an enclosing scope), the shape and element-type
// rule of each op family, loops and branches (iter_args or initial values,
// yields and results agree; a branch's condition is a bool scalar), and
// after layout assignment the layout rules: every tile value has a layout
// of its own shape that owns every element, elementwise operands share the
// result's layout, a reduction's result is the slice of its operand's, an
// expand's is the expand of its operand's, a conversion changes the layout,
// a load's vector width divides its contiguity, an atomic's values and old
// values share a type and a layout. Run by the driver after each
// pass; a failure is a compiler bug.
//
//===----------------------------------------------------------------------===//
#include "tile/passes.h"

#include <set>

namespace etl {
namespace {

std::string shape_str(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

class Verifier {
public:
  Verifier(const TileFunc &f, std::vector<std::string> &errs) : f_(f), errs_(errs) {}

  void run() {
    std::set<int> scope;
    ops(f_.body, scope);
  }

private:
  const TileFunc &f_;
  std::vector<std::string> &errs_;
  std::set<int> defined_;

  void fail(const TOp &op, const std::string &msg) {
    errs_.push_back("task " + f_.name + ": " + op_spelling(op.kind) + ": " + msg);
  }
  const TValue &val(int v) const { return f_.values[size_t(v)]; }
  bool valid(int v) const { return v >= 0 && size_t(v) < f_.values.size(); }
  const Layout *lay(int v) const {
    int l = val(v).layout;
    return l >= 0 && size_t(l) < f_.layouts.size() ? &f_.layouts[size_t(l)] : nullptr;
  }

  void define(const TOp &op, int v, std::set<int> &scope) {
    if (!valid(v))
      return fail(op, "result %" + std::to_string(v) + " is not a value");
    if (!defined_.insert(v).second)
      fail(op, "%" + std::to_string(v) + " is defined twice");
    scope.insert(v);
    if (f_.assigned && val(v).is_tile() && !val(v).shared) {
      const Layout *l = lay(v);
      if (!l)
        fail(op, "%" + std::to_string(v) + " has no layout");
      else if (l->shape != val(v).shape)
        fail(op, "%" + std::to_string(v) + " has shape " + shape_str(val(v).shape) +
                     " but its layout " + shape_str(l->shape));
      else if (!l->surjective())
        fail(op, "the layout of %" + std::to_string(v) + " leaves elements without an owner");
    }
  }

  void ops(const std::vector<TOp> &body, std::set<int> scope) {
    for (const TOp &op : body) {
      for (int v : op.operands)
        if (!valid(v) || !scope.count(v))
          fail(op, "operand %" + std::to_string(v) + " is not defined before its use");
      if (op.kind == TileOpKind::For) {
        std::set<int> inner = scope;
        for (int a : op.block_args)
          define(op, a, inner);
        if (op.block_args.size() != op.operands.size() || op.results.size() != op.operands.size())
          fail(op, "iter_args, initial values and results differ in number");
        if (op.body.empty() || op.body.back().kind != TileOpKind::Yield)
          fail(op, "the body does not end with yield");
        else if (op.body.back().operands.size() != op.block_args.size())
          fail(op, "yield passes a different number of values than the iter_args");
        else
          for (size_t j = 0; j < op.block_args.size(); ++j)
            same_type(op, op.block_args[j],
                      {op.operands[j], op.body.back().operands[j], op.results[j]});
        ops(op.body, inner);
      }
      if (op.kind == TileOpKind::If) {
        if (op.operands.empty() || !valid(op.operands[0]) || val(op.operands[0]).is_tile() ||
            val(op.operands[0]).elem != ElemType::Bool)
          fail(op, "the condition is not a bool scalar");
        if (op.results.size() + 1 != op.operands.size())
          fail(op, "initial values and results differ in number");
        if (op.body.empty() || op.body.back().kind != TileOpKind::Yield)
          fail(op, "the body does not end with yield");
        else if (op.body.back().operands.size() != op.results.size())
          fail(op, "yield passes a different number of values than the results");
        else
          for (size_t j = 0; j < op.results.size() && j + 1 < op.operands.size(); ++j)
            same_type(op, op.results[j], {op.operands[j + 1], op.body.back().operands[j]});
        ops(op.body, scope);
      }
      for (int r : op.results)
        define(op, r, scope);
      rules(op);
    }
  }

  void same_type(const TOp &op, int a, std::vector<int> others) {
    for (int b : others) {
      if (!valid(a) || !valid(b))
        continue;
      if (val(a).shape != val(b).shape || val(a).elem != val(b).elem)
        fail(op, "%" + std::to_string(a) + " and %" + std::to_string(b) + " differ in type");
      if (f_.assigned && val(a).layout != val(b).layout && val(a).is_tile())
        fail(op, "%" + std::to_string(a) + " and %" + std::to_string(b) + " differ in layout");
    }
  }

  void rules(const TOp &op) {
    for (int v : op.operands)
      if (!valid(v))
        return;
    int r = op.results.empty() ? -1 : op.results[0];
    if (r >= 0 && !valid(r))
      return;
    switch (op_family(op.kind)) {
    case OpFamily::Elementwise:
      for (int v : op.operands) {
        if (val(v).shape != val(r).shape)
          fail(op, "operand shape " + shape_str(val(v).shape) + " is not the result's " +
                       shape_str(val(r).shape));
        else if (f_.assigned && val(r).is_tile() && val(v).layout != val(r).layout)
          fail(op, "operand %" + std::to_string(v) + " is not in the result's layout");
      }
      if (op.kind == TileOpKind::Binary)
        for (int v : op.operands)
          if (val(v).elem != val(r).elem)
            fail(op, "operand element type differs from the result's");
      if (op.kind == TileOpKind::Compare && val(r).elem != ElemType::Bool)
        fail(op, "a comparison yields bool");
      break;
    case OpFamily::Reduction: {
      const TValue &a = val(op.operands.at(0));
      if (op.axis < 0 || size_t(op.axis) >= a.shape.size()) {
        fail(op, "axis " + std::to_string(op.axis) + " out of range");
        break;
      }
      std::vector<int64_t> want = a.shape;
      if (op.kind != TileOpKind::Scan)
        want.erase(want.begin() + op.axis);
      if (val(r).shape != want)
        fail(op, "result shape " + shape_str(val(r).shape) + ", expected " + shape_str(want));
      else if (f_.assigned && val(r).is_tile() && lay(op.operands[0]) && lay(r)) {
        Layout expect = op.kind == TileOpKind::Scan
                            ? *lay(op.operands[0])
                            : slice_layout(*lay(op.operands[0]), unsigned(op.axis));
        if (expect != *lay(r))
          fail(op, "the result's layout is not the slice of the operand's");
      }
      break;
    }
    case OpFamily::Shape:
      shape_rules(op, r);
      break;
    case OpFamily::Layout:
      if (val(op.operands[0]).shape != val(r).shape)
        fail(op, "changes the shape");
      if (f_.assigned && val(op.operands[0]).layout == val(r).layout)
        fail(op, "converts to the layout it already has");
      break;
    case OpFamily::Memory:
      if (op.mem.analysed && (op.mem.vec & (op.mem.vec - 1)))
        fail(op, "vector width " + std::to_string(op.mem.vec) + " is not a power of two");
      if (op.mem.analysed && op.mem.fast_dim >= 0 && op.mem.contiguity % op.mem.vec)
        fail(op, "vector width exceeds the contiguity");
      if (op.kind == TileOpKind::Atomic)
        atomic_rules(op, r);
      break;
    case OpFamily::Contraction: {
      const TValue &a = val(op.operands.at(0)), &b = val(op.operands.at(1));
      if (a.shape.empty() || b.shape.size() != 2 || a.shape.back() != b.shape[0])
        fail(op,
             "operands " + shape_str(a.shape) + " and " + shape_str(b.shape) + " do not contract");
      break;
    }
    case OpFamily::Async:
      async_rules(op, r);
      break;
    default:
      break;
    }
  }

  /// Rings (tile/pipeline.cpp): a buffer is [S, R, C] (dot operands:
  /// 16-bit, f32 for a tf32 dot) or [S, C] (a plain rank-1 tile);
  /// copies and views name one and a slot; a view is one slot's tile.
  void async_rules(const TOp &op, int r) {
    const bool wants_buf = op.kind == TileOpKind::AsyncCopy || op.kind == TileOpKind::SmemView;
    if (op.kind == TileOpKind::SmemAlloc &&
        (r < 0 || !val(r).shared || val(r).shape.size() < 2 || val(r).shape.size() > 3 ||
         val(r).shape[0] < 2 || (!op.attr.empty() && !row_major_ring(op.attr))))
      fail(op, "does not yield a ring of at least 2 slots");
    if (wants_buf && (op.operands.size() != 1 || !val(op.operands[0]).shared || !op.sym))
      return fail(op, "needs a ring and a slot");
    if (op.kind == TileOpKind::AsyncCopy && (!op.lo || !op.hi || op.tensor < 0))
      fail(op, "needs a tensor slice and its iteration bounds");
    if (op.kind == TileOpKind::SmemView) {
      const TValue &buf = val(op.operands[0]);
      if (r < 0 || val(r).elem != buf.elem ||
          val(r).shape != std::vector<int64_t>(buf.shape.begin() + 1, buf.shape.end()))
        fail(op, "is not a slot of its ring");
    }
    if ((op.kind == TileOpKind::AsyncWait || op.kind == TileOpKind::WgmmaWait) && op.axis < 0)
      fail(op, "needs the groups it leaves in flight");
    if (op.kind == TileOpKind::WgmmaWait &&
        (op.operands.size() != 1 || r < 0 || val(r).shape != val(op.operands[0]).shape ||
         val(r).elem != ElemType::F32 || val(r).layout != val(op.operands[0]).layout))
      fail(op, "needs f32 accumulators and yields them in their layout");
  }

  /// An atomic: a known kind, one element per access, its values (and its
  /// result, the old values) of one type and, after assignment, layout.
  void atomic_rules(const TOp &op, int r) {
    if (op.attr != "add" && op.attr != "max" && op.attr != "min" && op.attr != "cas")
      return fail(op, "unknown kind '" + op.attr + "'");
    if (op.operands.size() < value_operands(op))
      return fail(op, "without its values");
    if (op.mem.analysed && op.mem.vec != 1)
      fail(op, "more than one element per access");
    std::vector<int> same(op.operands.begin() + 1, op.operands.begin() + long(value_operands(op)));
    if (r >= 0)
      same.push_back(r);
    same_type(op, op.operands[0], same);
  }

  void shape_rules(const TOp &op, int r) {
    const std::vector<int64_t> &rs = val(r).shape;
    if (op.kind == TileOpKind::Expand) {
      const TValue &a = val(op.operands[0]);
      std::vector<int64_t> want = a.shape;
      if (op.axis < 0 || size_t(op.axis) > want.size())
        return fail(op, "axis out of range");
      want.insert(want.begin() + op.axis, 1);
      if (rs != want)
        fail(op, "result shape " + shape_str(rs) + ", expected " + shape_str(want));
      else if (f_.assigned && a.is_tile() && lay(op.operands[0]) && lay(r) &&
               slice_layout(*lay(r), unsigned(op.axis)) != *lay(op.operands[0]))
        fail(op, "the operand's layout is not the slice of the result's");
    }
    if (op.kind == TileOpKind::Broadcast) {
      const TValue &a = val(op.operands[0]);
      bool ok = a.shape.size() == rs.size();
      for (size_t d = 0; ok && d < rs.size(); ++d)
        ok = a.shape[d] == rs[d] || a.shape[d] == 1;
      if (!ok)
        fail(op, "cannot broadcast " + shape_str(a.shape) + " to " + shape_str(rs));
    }
    if (op.kind == TileOpKind::Reshape && val(op.operands[0]).numel() != val(r).numel())
      fail(op, "changes the number of elements");
    if (op.kind == TileOpKind::Transpose &&
        (rs.size() != 2 || val(op.operands[0]).shape != std::vector<int64_t>{rs[1], rs[0]}))
      fail(op, "result is not the operand transposed");
    else if (op.kind == TileOpKind::Transpose && f_.assigned && lay(op.operands[0]) && lay(r) &&
             transpose_layout(*lay(op.operands[0])) != *lay(r))
      fail(op, "the result's layout is not the operand's transposed (a renaming)");
    if ((op.kind == TileOpKind::Splat || op.kind == TileOpKind::Arange) && !val(r).is_tile())
      fail(op, "yields a scalar");
  }
};

} // namespace

std::vector<std::string> verify_tile(const TileModule &m) {
  std::vector<std::string> errs;
  for (const TileFunc &f : m.funcs)
    Verifier(f, errs).run();
  return errs;
}

} // namespace etl
