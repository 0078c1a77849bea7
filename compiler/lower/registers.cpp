//===- lower/registers.cpp - Registers a task's tiles need ----------------===//
//
// See registers.h. Two walks over a task body: the first numbers its
// statements in order and finds each local's live range, the second adds,
// at every statement, the registers of the locals live across it to what
// its expression needs.
//
//===----------------------------------------------------------------------===//
#include "lower/registers.h"

#include "lower/lowerer.h"
#include "target/target.h"
#include "tile/passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace etl {

namespace {

/// Registers per thread of one value of type `t` (0 unless a tile).
int64_t regs_of(const Type &t, unsigned threads) {
  if (!t.is_tile())
    return 0;
  int64_t n = 1;
  for (int64_t d : t.tile_shape)
    n *= d;
  int64_t words = byte_size(t.elem) == 8 ? 2 : 1;
  return (n + threads - 1) / threads * words;
}

class Estimate {
public:
  Estimate(const TaskDecl &t, unsigned threads) : t_(t), threads_(threads) {
    first_.assign(t.locals.size(), -1);
    last_.assign(t.locals.size(), -1);
    for (const LocalVar &l : t.locals)
      local_regs_.push_back(regs_of(l.type, threads));
  }

  int64_t run() {
    number(t_.body);
    scan(t_.body);
    peak(t_.body);
    return best_;
  }

private:
  const TaskDecl &t_;
  unsigned threads_;
  int next_ = 0;
  std::map<const Stmt *, std::pair<int, int>> span_; ///< statement: its number, its last inside
  std::vector<int> first_, last_;          ///< per local: defining and last using statement
  std::vector<std::pair<int, int>> loops_; ///< enclosing loops, outermost first
  std::vector<int64_t> local_regs_;
  int64_t best_ = 0;

  void number(const std::vector<StmtPtr> &body) {
    for (const StmtPtr &s : body) {
      int at = next_++;
      number(s->body);
      number(s->else_body);
      span_[s.get()] = {at, next_ - 1};
    }
  }

  /// A use of local `l` at statement `at`: to the end of the outermost
  /// enclosing loop that does not contain its definition.
  void use(int l, int at) {
    if (l < 0 || size_t(l) >= last_.size())
      return;
    for (const auto &loop : loops_)
      if (first_[size_t(l)] < loop.first) {
        at = std::max(at, loop.second);
        break;
      }
    last_[size_t(l)] = std::max(last_[size_t(l)], at);
  }

  void uses(const Expr &e, int at) {
    if (e.kind == ExprKind::Name && e.ref == NameRef::Local)
      use(e.ref_index, at);
    for (const ExprPtr &a : e.args)
      if (a)
        uses(*a, at);
    for (const KwArg &k : e.kwargs)
      if (k.value)
        uses(*k.value, at);
  }

  void scan(const std::vector<StmtPtr> &body) {
    for (const StmtPtr &s : body) {
      auto [at, end] = span_.at(s.get());
      bool defines = s->kind == StmtKind::Let || s->kind == StmtKind::Var;
      if (defines && s->local_index >= 0 && size_t(s->local_index) < first_.size())
        first_[size_t(s->local_index)] = at;
      if (s->kind == StmtKind::Assign)
        use(s->local_index, at);
      for (const ExprPtr *x : {&s->value, &s->lo, &s->hi, &s->step})
        if (*x)
          uses(**x, at);
      bool loop = s->kind == StmtKind::For;
      if (loop)
        loops_.push_back({at, end});
      scan(s->body);
      scan(s->else_body);
      if (loop)
        loops_.pop_back();
    }
  }

  /// New registers `e` occupies once evaluated (a local's are counted live).
  int64_t fresh(const Expr &e) const {
    if (e.kind == ExprKind::Name)
      return 0;
    return regs_of(e.type, threads_);
  }

  /// `a` is an operand of tensor-core dot `e` that goes global -> shared by
  /// cp.async (a plain load of an f16/bf16 tile: lower_tile_mma.cpp),
  /// never through registers.
  static bool cp_async_operand(const Expr &e, const Expr &a) {
    auto half = [](ElemType t) { return t == ElemType::F16 || t == ElemType::BF16; };
    return e.kind == ExprKind::Call && e.builtin == Builtin::Dot && e.args.size() == 2 &&
           e.kwargs.empty() && half(e.args[0]->type.elem) && half(e.args[1]->type.elem) &&
           a.kind == ExprKind::Call && a.builtin == Builtin::Load && a.kwargs.empty();
  }

  /// The most registers evaluating `e` needs at once: each operand's needs
  /// on top of the results of the operands before it, and all operands with
  /// the result.
  int64_t need(const Expr &e) const {
    std::vector<const Expr *> ops;
    for (const ExprPtr &a : e.args)
      if (a && !cp_async_operand(e, *a))
        ops.push_back(a.get());
    for (const KwArg &k : e.kwargs)
      if (k.value)
        ops.push_back(k.value.get());
    int64_t held = 0, most = 0;
    for (const Expr *o : ops) {
      most = std::max(most, held + need(*o));
      held += fresh(*o);
    }
    return std::max(most, held + fresh(e));
  }

  void peak(const std::vector<StmtPtr> &body) {
    for (const StmtPtr &s : body) {
      int at = span_.at(s.get()).first;
      int64_t live = 0;
      for (size_t l = 0; l < first_.size(); ++l)
        if (first_[l] >= 0 && first_[l] < at && last_[l] >= at)
          live += local_regs_[l];
      int64_t here = 0;
      for (const ExprPtr *x : {&s->value, &s->lo, &s->hi, &s->step})
        if (*x)
          here = std::max(here, need(**x));
      best_ = std::max(best_, live + here);
      peak(s->body);
      peak(s->else_body);
    }
  }
};

/// Registers per thread the tile values of `f` (layouts assigned) keep live
/// at its busiest op: a value is live from its op to its last use (to the
/// end of a loop that uses it when defined outside; an iter_arg and its
/// yield operand through the whole loop; an `if`'s results from the end of
/// its body), `layout.num_regs()` registers
/// each (two for 8-byte elements).
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
  std::set<int> dots_, shared_, halved_;

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
    if (!x.is_tile() || x.layout < 0 || shared_.count(v))
      return 0;
    int64_t n = f_.layouts[size_t(x.layout)].num_regs();
    if (halved_.count(v))
      n /= 2;
    return byte_size(x.elem) == 8 ? 2 * n : n;
  }
  void def(int v, int at) { range_[v] = {at, at}; }
  void use(int v, int at) {
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

bool has_mma_dot(const TileFunc &f, const std::vector<TOp> &body) {
  for (const TOp &op : body)
    if (mma_dot(f, op) || has_mma_dot(f, op.body))
      return true;
  return false;
}

} // namespace

int64_t tile_ir_registers(const TileFunc &f) { return TileEstimate(f).run(); }

int64_t tile_registers(const TaskDecl &t, unsigned threads) {
  return Estimate(t, threads ? threads : 128).run();
}

int64_t register_need(const TaskDecl &t, unsigned threads) {
  return tile_registers(t, threads) * 7 / 4;
}

void warn_register_spills(const KernelDecl &k, unsigned threads, const TargetInfo &target,
                          Diag &diag, const TileModule *tm) {
  // The smallest register budget of the GPU targets, and whose it is.
  std::string which;
  const unsigned limit = target.register_limit(threads, &which);
  if (!limit)
    return;
  for (const TaskDecl &t : k.tasks) {
    int64_t tiles = tile_registers(t, threads), need = register_need(t, threads);
    // A body with tensor-core dots that the tile IR lowers: its layouts say
    // the registers (the accumulators are the dots' results, the operands
    // go to shared memory, an a in the A layout is packed in pairs, x +
    // dot accumulates onto x, broadcasts rename registers), 5/4 of them
    // with the addresses (prefill_attention's attn, BM = 128, BN = 16 at
    // 256 threads: 172 tile registers, need 215; ptxas 254 on sm_80 and
    // sm_90 with o_proj beside it, no spill).
    if (tm)
      for (const TileFunc &f : tm->funcs)
        if (f.name == t.name && has_mma_dot(f, f.body) && tile_lowering_gap(f, k, t, threads).empty()) {
          tiles = tile_ir_registers(f);
          need = tiles * 5 / 4;
        }
    if (need > int64_t(limit))
      diag.warning(DiagId::RegisterSpill, t.name_range,
                   {t.name, std::to_string(need), std::to_string(tiles), std::to_string(threads),
                    std::to_string(limit), which});
  }
}

} // namespace etl
