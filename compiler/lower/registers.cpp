//===- lower/registers.cpp - Registers a task's tiles need ----------------===//
//
// See registers.h. One walk over a task body's tile IR numbers its ops in
// order and finds each value's live range; the estimate is the most
// registers the values live at one op take.
//
//===----------------------------------------------------------------------===//
#include "lower/registers.h"

#include "target/target.h"
#include "tile/passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace etl {

namespace {

/// Registers per thread the tile values of `f` (layouts assigned) keep live
/// at its busiest op: a value is live from its op to its last use (to the
/// end of a loop that uses it when defined outside; an iter_arg and its
/// yield operand through the whole loop; an `if`'s results from the end of
/// its body), `layout.num_regs()` registers
/// each (two for 8-byte elements). A value of an elementwise op that only
/// elementwise ops and stores of its own body read takes none: LLVM and
/// ptxas compute it element by element where it is read, so its operands
/// stay live to there instead (tests/unit/lower/registers_test.cpp: five
/// [128, 128] f32 tiles of one elementwise chain fit, four loads do not).
class TileEstimate {
public:
  explicit TileEstimate(const TileFunc &f) : f_(f) {}
  int64_t run() {
    count_uses(f_.body);
    for (const auto &[v, users] : users_) {
      // A dot accumulated onto x (lower_tile_mma.cpp): x's registers.
      if (users.size() == 1 && users[0]->kind == TileOpKind::Binary && users[0]->attr == "add")
        for (int o : users[0]->operands)
          if (dots_.count(o) && o != v)
            shared_.insert(o);
      // A 16-bit a in the A layout used only by dots: packed in pairs.
      bool only_a = !users.empty();
      for (const TOp *u : users)
        only_a = only_a && mma_dot(f_, *u) && u->operands[0] == v && u->operands[1] != v &&
                 mma_staging(f_, *u).a_regs;
      if (only_a)
        halved_.insert(v);
      // Computed where it is read (elementwise ops and stores of the body
      // that defines it).
      auto d = def_.find(v);
      bool fused = d != def_.end() && op_family(d->second->kind) == OpFamily::Elementwise &&
                   f_.values[size_t(v)].is_tile() && !users.empty();
      for (const TOp *u : users)
        fused = fused &&
                (op_family(u->kind) == OpFamily::Elementwise || u->kind == TileOpKind::Store) &&
                body_of_.at(u) == body_of_.at(d->second);
      if (fused)
        fused_.insert(v);
    }
    number(f_.body, -1);
    int64_t best = 0;
    for (int p = 0; p < next_; ++p) {
      int64_t live = 0;
      for (const auto &[v, r] : range_)
        if (r.first <= p && p <= r.second)
          live += regs(v);
      best = std::max(best, live);
    }
    return best;
  }

private:
  const TileFunc &f_;
  int next_ = 0;
  std::map<int, std::pair<int, int>> range_;
  std::vector<std::pair<int, int>> loops_; ///< enclosing loops: start, end

  std::map<int, std::vector<const TOp *>> users_;
  std::map<int, const TOp *> def_;                          ///< value: its op
  std::map<const TOp *, const std::vector<TOp> *> body_of_; ///< op: the body holding it
  std::set<int> dots_, shared_, halved_, fused_;

  /// A reshape through scratch (lower_tile_map.cpp): registers of its own.
  bool reshape_moves(const TOp &op) const {
    const TValue &a = f_.values[size_t(op.operands[0])], &r = f_.values[size_t(op.results[0])];
    if (!a.is_tile() || !r.is_tile() || a.layout < 0 || r.layout < 0)
      return false;
    std::optional<Layout> l = reshape_layout(f_.layouts[size_t(a.layout)], r.shape);
    return !l || *l != f_.layouts[size_t(r.layout)];
  }
  void count_uses(const std::vector<TOp> &body) {
    for (const TOp &op : body) {
      for (int v : op.operands)
        users_[v].push_back(&op);
      for (int v : op.results)
        def_[v] = &op;
      body_of_[&op] = &body;
      if (mma_dot(f_, op))
        dots_.insert(op.results[0]);
      // Renamings of their operand's registers, and constants.
      if (op.kind == TileOpKind::Broadcast || op.kind == TileOpKind::Expand ||
          op.kind == TileOpKind::Transpose || op.kind == TileOpKind::Splat ||
          (op.kind == TileOpKind::Reshape && !reshape_moves(op)))
        shared_.insert(op.results.begin(), op.results.end());
      count_uses(op.body);
    }
  }
  int64_t regs(int v) const {
    const TValue &x = f_.values[size_t(v)];
    if (!x.is_tile() || x.layout < 0 || shared_.count(v) || fused_.count(v))
      return 0;
    int64_t n = f_.layouts[size_t(x.layout)].num_regs();
    if (halved_.count(v))
      n /= 2;
    return byte_size(x.elem) == 8 ? 2 * n : n;
  }
  void def(int v, int at) { range_[v] = {at, at}; }
  void use(int v, int at) {
    if (fused_.count(v)) // read here: its operands are
      for (int o : def_.at(v)->operands)
        use(o, at);
    auto it = range_.find(v);
    if (it == range_.end())
      return;
    for (const auto &l : loops_) // outermost loop not holding the def
      if (it->second.first < l.first) {
        at = std::max(at, l.second);
        break;
      }
    it->second.second = std::max(it->second.second, at);
  }
  int end_of(const std::vector<TOp> &body, int start) const {
    int n = start;
    for (const TOp &op : body)
      n = end_of(op.body, n + 1);
    return n;
  }
  void number(const std::vector<TOp> &body, int) {
    for (const TOp &op : body) {
      int at = next_++;
      for (int v : op.operands)
        use(v, at);
      if (op.kind == TileOpKind::For) {
        int end = end_of(op.body, at);
        for (int v : op.block_args) // the yield's operand takes over at the end
          def(v, at);
        loops_.push_back({at, end});
        number(op.body, at);
        loops_.pop_back();
        for (int v : op.results)
          def(v, end);
        continue;
      }
      if (op.kind == TileOpKind::If) { // its results from the end of its body
        int end = end_of(op.body, at);
        number(op.body, at);
        for (int v : op.results)
          def(v, end);
        continue;
      }
      for (int v : op.results)
        def(v, at);
    }
  }
};

} // namespace

int64_t tile_ir_registers(const TileFunc &f) { return TileEstimate(f).run(); }

int64_t register_need(int64_t tile_regs) { return tile_regs * 5 / 4; }

void warn_register_spills(const KernelDecl &k, unsigned threads, const TargetInfo &target,
                          Diag &diag, const TileModule &tiles) {
  // The smallest register budget of the GPU targets, and whose it is.
  std::string which;
  const unsigned limit = target.register_limit(threads, &which);
  if (!limit)
    return;
  for (const TaskDecl &t : k.tasks)
    for (const TileFunc &f : tiles.funcs) {
      if (f.name != t.name || !f.assigned)
        continue;
      const int64_t regs = tile_ir_registers(f), need = register_need(regs);
      if (need > int64_t(limit))
        diag.warning(DiagId::RegisterSpill, t.name_range,
                     {t.name, std::to_string(need), std::to_string(regs), std::to_string(threads),
                      std::to_string(limit), which});
    }
}

} // namespace etl
