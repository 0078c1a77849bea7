//===- cost/cost.cpp - Work and traffic of a kernel, and its speed of light ===//
//
// What this owns: estimate_cost, speed_of_light and print_cost (see
// cost/cost.h). FLOPs come from one walk over each task body; bytes from the
// access lists of sema/access.h.
//
//===----------------------------------------------------------------------===//
#include "cost/cost.h"

#include "sema/access.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace etl {

const std::vector<GpuSpec> &known_gpus() {
  static const std::vector<GpuSpec> gpus = {
#define ETL_GPU(ID, NAME, HBM, FP32, TC16, TF32, SMS, MHZ, SOURCE)                                 \
  GpuSpec{NAME, HBM, FP32, TC16, TF32, SMS, MHZ, SOURCE},
#include "cost/gpus.def"
  };
  return gpus;
}

const GpuSpec *find_gpu(const std::string &id) {
  for (const GpuSpec &g : known_gpus())
    if (id == g.id)
      return &g;
  return nullptr;
}

namespace {

Sym numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return Sym(n);
}

Sym numel(const std::vector<Sym> &shape) {
  Sym n(1);
  for (const Sym &d : shape)
    n = n * d;
  return n;
}

bool is_half(ElemType t) { return t == ElemType::F16 || t == ElemType::BF16; }

/// The FLOPs of one task body, each statement weighted by the trips of the
/// loops around it.
struct FlopCounter {
  const TaskDecl &task;
  Sym tc, other;

  void expr(const Expr &e, const Sym &w) {
    for (const ExprPtr &a : e.args)
      if (a)
        expr(*a, w);
    for (const KwArg &k : e.kwargs)
      if (k.value)
        expr(*k.value, w);
    if (e.type.kind != TypeKind::Tile)
      return; // index math and slices are addresses; scalars fold to constants
    Sym n = numel(e.type.tile_shape);
    switch (e.kind) {
    case ExprKind::Binary:
    case ExprKind::Unary:
      other = other + w * n;
      return;
    case ExprKind::Call:
      break;
    default:
      return;
    }
    switch (e.builtin) {
    case Builtin::Dot:
      if (e.args.size() == 2) {
        const Type &a = e.args[0]->type, &b = e.args[1]->type;
        int64_t k = a.tile_shape.empty() ? 1 : a.tile_shape.back();
        Sym work = w * Sym(2) * n * Sym(k);
        if (is_half(a.elem) && is_half(b.elem))
          tc = tc + work;
        else
          other = other + work;
      }
      return;
    case Builtin::Sum:
    case Builtin::Max:
    case Builtin::Min:
    case Builtin::Argmax:
    case Builtin::Argmin:
      // a reduction: one op per input element; max(a, b): per result element
      other = other + w * (e.args.size() == 1 ? numel(e.args[0]->type.tile_shape) : n);
      return;
    case Builtin::Exp:
    case Builtin::Log:
    case Builtin::Sqrt:
    case Builtin::Rsqrt:
    case Builtin::Abs:
    case Builtin::Sin:
    case Builtin::Cos:
    case Builtin::Tanh:
    case Builtin::Erf:
    case Builtin::Pow:
    case Builtin::Floor:
    case Builtin::Ceil:
    case Builtin::Round:
    case Builtin::Popc:
    case Builtin::Select:
    case Builtin::Cumsum:
      other = other + w * n;
      return;
    default: // loads, stores, casts, constants and shape ops: no arithmetic
      return;
    }
  }

  /// `acc += dot(a, b)` of f16/bf16 tiles: the mma adds into its C operand
  /// (the accumulator fragments, lower_tile_mma.cpp), so the += is inside the
  /// dot's 2 M N K and costs no FP32 add of its own.
  static bool fused_mma_accumulate(const Stmt &s) {
    const Expr *d = s.value.get();
    return s.assign_op == BinOp::Add && d && d->kind == ExprKind::Call &&
           d->builtin == Builtin::Dot && d->args.size() == 2 && is_half(d->args[0]->type.elem) &&
           is_half(d->args[1]->type.elem);
  }

  void stmts(const std::vector<StmtPtr> &body, const Sym &w) {
    for (const StmtPtr &s : body) {
      if (s->value)
        expr(*s->value, w);
      if (s->kind == StmtKind::Assign && s->compound && s->local_index >= 0 &&
          size_t(s->local_index) < task.locals.size() && !fused_mma_accumulate(*s))
        other = other + w * numel(task.locals[size_t(s->local_index)].type.tile_shape);
      if (s->kind == StmtKind::If) { // an upper bound: both branches counted
        stmts(s->body, w);
        stmts(s->else_body, w);
      }
      if (s->kind != StmtKind::For)
        continue;
      const AccessLoop loop = access_loop(*s);
      Sym trips = Sym::symbol("trips@" + std::to_string(s->range.begin.line));
      if (loop.trips)
        trips = *loop.trips;
      stmts(s->body, w * trips);
    }
  }
};

/// `per_task` summed over the tasks of `grp`: times the task count, unless
/// it depends on a task index; then the symbol sum[GROUP](per_task), whose
/// meaning goes into `sums` (see cost.h).
Sym over_tasks(const TaskGroup &grp, const Sym &per_task, std::map<std::string, DomainSum> &sums) {
  bool varies = false;
  for (const std::string &v : grp.vars)
    varies = varies || per_task.mentions(v);
  if (!varies)
    return per_task * grp.task_count;
  std::string name = "sum[" + grp.name + "](" + per_task.str() + ")";
  sums[name] = DomainSum{per_task, grp.vars, grp.lo, grp.hi};
  return Sym::symbol(name);
}

/// Elements of each tensor a group's tasks move (reads, writes).
struct Moved {
  std::map<int, Sym> read, written;
};

Moved group_moved(const KernelDecl &k, const TaskGroup &grp,
                  std::map<std::string, DomainSum> &sums) {
  Moved mv;
  for (const Access &a : collect_accesses(grp.decl->body)) {
    if (a.tensor < 0 || size_t(a.tensor) >= k.tensors.size())
      continue;
    Sym n = numel(a.shape);
    for (const AccessLoop &l : a.loops)
      n = n * (l.trips ? *l.trips : Sym::symbol("trips@" + l.var));
    n = over_tasks(grp, n, sums);
    auto &m = a.write ? mv.written : mv.read;
    auto it = m.find(a.tensor);
    m[a.tensor] = it == m.end() ? n : it->second + n;
    if (a.atomic) { // a read-modify-write reads the elements too
      auto r = mv.read.find(a.tensor);
      mv.read[a.tensor] = r == mv.read.end() ? n : r->second + n;
    }
  }
  return mv;
}

/// Bytes of `m`: each tensor's moved elements, at most its size (a packed
/// i4/u4 tensor: half a byte each, its rows being even).
Sym capped_bytes(const KernelDecl &k, const std::map<int, Sym> &m) {
  Sym total(0);
  for (auto &[t, n] : m) {
    const TensorDecl &td = k.tensors[size_t(t)];
    Sym elems = Sym::min(n, numel(td.shape));
    total = total + (is_packed(td.type.elem)
                         ? Sym::floordiv(elems * Sym(int64_t(elem_bits(td.type.elem))), Sym(8))
                         : elems * Sym(int64_t(byte_size(td.type.elem))));
  }
  return total;
}

Sym loop_trips(const AccessLoop &l, const std::string &name) {
  return l.trips ? *l.trips : Sym::symbol("trips@" + name);
}

/// The `for` loops of `body` in source order (both arms of an `if`), each
/// with its statement.
void collect_loops(const std::vector<StmtPtr> &body, int depth,
                   std::vector<std::pair<const Stmt *, LoopTrips>> &out) {
  for (const StmtPtr &s : body) {
    if (s->kind == StmtKind::If) {
      collect_loops(s->body, depth, out);
      collect_loops(s->else_body, depth, out);
    }
    if (s->kind != StmtKind::For)
      continue;
    out.push_back({s.get(), LoopTrips{s->range.begin.line, depth,
                                      loop_trips(access_loop(*s), std::to_string(s->range.begin.line)),
                                      Sym(0)}});
    collect_loops(s->body, depth + 1, out);
  }
}

/// The loops of a group's body with the bytes each trip moves: per access
/// in the loop, its tile's bytes times the trips of the loops inside this
/// one that enclose it.
std::vector<LoopTrips> body_loops(const KernelDecl &k, const TaskGroup &grp) {
  std::vector<std::pair<const Stmt *, LoopTrips>> loops;
  collect_loops(grp.decl->body, 0, loops);
  std::vector<std::pair<const Stmt *, std::vector<size_t>>> bodies;
  std::vector<Access> acc = collect_accesses(grp.decl->body, &bodies);
  std::vector<LoopTrips> out;
  for (auto &[stmt, lt] : loops) {
    for (auto &[s, idx] : bodies) {
      if (s != stmt)
        continue;
      for (size_t i : idx) {
        const Access &a = acc[i];
        if (a.tensor < 0 || size_t(a.tensor) >= k.tensors.size())
          continue;
        Sym n = numel(a.shape);
        for (size_t j = size_t(lt.depth) + 1; j < a.loops.size(); ++j)
          n = n * loop_trips(a.loops[j], a.loops[j].var);
        const ElemType e = k.tensors[size_t(a.tensor)].type.elem;
        lt.bytes = lt.bytes + (is_packed(e) ? Sym::floordiv(n * Sym(int64_t(elem_bits(e))), Sym(8))
                                            : n * Sym(int64_t(byte_size(e))));
      }
    }
    out.push_back(lt);
  }
  return out;
}

using Env = std::map<std::string, int64_t>;
using Sums = std::map<std::string, DomainSum>;
constexpr int64_t kMaxEnumerated = int64_t(1) << 24; // tasks a domain sum may visit

std::optional<int64_t> eval_int(const Sym &s, const Env &env, const Sums &sums);

/// The sum of d.per_task over the domain points from var k on (vars before
/// k bound in env); `left` counts down the points still allowed.
std::optional<int64_t> sum_domain(const DomainSum &d, size_t k, Env &env, const Sums &sums,
                                  int64_t &left) {
  if (k == d.vars.size()) {
    if (--left < 0)
      return std::nullopt;
    return eval_int(d.per_task, env, sums);
  }
  // A box whose bounds do not depend on the vars still unbound: refuse one
  // larger than the points left before visiting any (2^26 tasks must not
  // cost 2^24 evaluations first).
  int64_t box = 1;
  for (size_t j = k; j < d.vars.size() && box > 0; ++j) {
    auto l = eval_int(d.lo[j], env, sums), h = eval_int(d.hi[j], env, sums);
    if (!l || !h) {
      box = 0;
      break;
    }
    if (__builtin_mul_overflow(box, std::max<int64_t>(0, *h - *l), &box))
      return std::nullopt;
  }
  if (box > left)
    return std::nullopt;
  auto lo = eval_int(d.lo[k], env, sums), hi = eval_int(d.hi[k], env, sums);
  if (!lo || !hi)
    return std::nullopt;
  int64_t total = 0;
  for (int64_t v = *lo; v < *hi; ++v) {
    env[d.vars[k]] = v;
    auto part = sum_domain(d, k + 1, env, sums, left);
    if (!part || __builtin_add_overflow(total, *part, &total))
      return std::nullopt;
  }
  env.erase(d.vars[k]);
  return total;
}

std::optional<int64_t> eval_int(const Sym &s, const Env &env, const Sums &sums) {
  return s.eval([&](const std::string &n) -> std::optional<int64_t> {
    auto it = env.find(n);
    if (it == env.end()) // an element read from data, `kv_len[b]`: the tensor's value
      it = env.find(n.substr(0, n.find('[')));
    if (it != env.end())
      return it->second;
    auto sum = sums.find(n);
    if (sum == sums.end())
      return std::nullopt;
    Env inner = env;
    int64_t left = kMaxEnumerated;
    return sum_domain(sum->second, 0, inner, sums, left);
  });
}

std::optional<double> eval(const Sym &s, const Env &env, const Sums &sums) {
  auto v = eval_int(s, env, sums);
  if (!v)
    return std::nullopt;
  return double(*v);
}

std::string fmt_time(double s) {
  char buf[64];
  if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  return buf;
}

std::string fmt_count(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

const char *kFormula =
    "SOL = max(bytes / HBM bandwidth, FLOPs_tc / tensor peak + FLOPs_other / FP32 peak)";

} // namespace

KernelCost estimate_cost(const KernelDecl &k, const TaskGraph &g) {
  KernelCost kc;
  kc.kernel = k.name;
  kc.total.name = "kernel";
  kc.total.tasks = Sym(0);
  kc.total.flops_tc = Sym(0);
  kc.total.flops_other = Sym(0);
  Moved all; // summed over groups
  for (const TaskGroup &grp : g.groups) {
    Cost c;
    c.name = grp.name;
    c.tasks = grp.task_count;
    FlopCounter fc{*grp.decl, Sym(0), Sym(0)};
    fc.stmts(grp.decl->body, Sym(1));
    c.flops_tc = over_tasks(grp, fc.tc, c.sums);
    c.flops_other = over_tasks(grp, fc.other, c.sums);
    Moved mv = group_moved(k, grp, c.sums);
    c.bytes_read = capped_bytes(k, mv.read);
    c.bytes_written = capped_bytes(k, mv.written);
    c.loops = body_loops(k, grp);
    for (auto [from, to] :
         {std::make_pair(&mv.read, &all.read), std::make_pair(&mv.written, &all.written)})
      for (auto &[t, n] : *from) {
        auto it = to->find(t);
        (*to)[t] = it == to->end() ? n : it->second + n;
      }
    kc.total.tasks = kc.total.tasks + c.tasks;
    kc.total.flops_tc = kc.total.flops_tc + c.flops_tc;
    kc.total.flops_other = kc.total.flops_other + c.flops_other;
    kc.total.sums.insert(c.sums.begin(), c.sums.end());
    kc.groups.push_back(std::move(c));
  }
  // Each element the kernel reads is read once, each it writes written once
  // (a buffer: written, then read), up to what its tasks move at all.
  kc.total.bytes_read = capped_bytes(k, all.read);
  kc.total.bytes_written = capped_bytes(k, all.written);
  return kc;
}

std::optional<double> eval_cost(const Sym &s, const std::map<std::string, int64_t> &env,
                                const std::map<std::string, DomainSum> &sums) {
  return eval(s, env, sums);
}

std::optional<Sol> speed_of_light(const Cost &c, const std::map<std::string, int64_t> &env,
                                  const GpuSpec &gpu) {
  auto tc = eval(c.flops_tc, env, c.sums), other = eval(c.flops_other, env, c.sums);
  auto rd = eval(c.bytes_read, env, c.sums), wr = eval(c.bytes_written, env, c.sums);
  if (!tc || !other || !rd || !wr)
    return std::nullopt;
  Sol s;
  s.flops_tc = *tc;
  s.flops_other = *other;
  s.bytes = *rd + *wr;
  s.memory_s = s.bytes / (gpu.hbm_gbps * 1e9);
  s.compute_s = *tc / (gpu.tc16_tflops * 1e12) + *other / (gpu.fp32_tflops * 1e12);
  s.sol_s = std::max(s.memory_s, s.compute_s);
  return s;
}

std::string print_cost(const KernelCost &kc, const std::map<std::string, int64_t> *env,
                       const GpuSpec &gpu, bool json) {
  std::vector<const Cost *> rows;
  for (const Cost &c : kc.groups)
    rows.push_back(&c);
  rows.push_back(&kc.total);
  struct Field {
    const char *name;
    Sym Cost::*sym;
  };
  const Field fields[] = {{"tasks", &Cost::tasks},
                          {"flops_tc", &Cost::flops_tc},
                          {"flops_other", &Cost::flops_other},
                          {"bytes_read", &Cost::bytes_read},
                          {"bytes_written", &Cost::bytes_written}};
  if (json) {
    std::string out;
    llvm::raw_string_ostream os(out);
    llvm::json::OStream j(os, 2);
    auto row = [&](const Cost &c) {
      j.object([&] {
        j.attribute("name", c.name);
        for (const Field &f : fields)
          j.attributeObject(f.name, [&] {
            j.attribute("expr", (c.*f.sym).str());
            if (env)
              if (auto v = eval(c.*f.sym, *env, c.sums))
                j.attribute("value", *v);
          });
        if (&c != &kc.total)
          j.attributeArray("loops", [&] {
            for (const LoopTrips &l : c.loops)
              j.object([&] {
                j.attribute("line", int64_t(l.line));
                j.attribute("depth", int64_t(l.depth));
                for (const auto &field : {std::make_pair("trips", &l.trips),
                                          std::make_pair("bytes", &l.bytes)}) {
                  const Sym *sym = field.second; // not a structured binding: clang 14
                  j.attributeObject(field.first, [&] {
                    j.attribute("expr", sym->str());
                    if (env)
                      if (auto v = eval(*sym, *env, c.sums))
                        j.attribute("value", *v);
                  });
                }
              });
          });
        if (env)
          if (auto s = speed_of_light(c, *env, gpu))
            j.attributeObject("sol", [&] {
              j.attribute("seconds", s->sol_s);
              j.attribute("memory_seconds", s->memory_s);
              j.attribute("compute_seconds", s->compute_s);
              j.attribute("bound", s->memory_s >= s->compute_s ? "memory" : "compute");
            });
      });
    };
    j.object([&] {
      j.attribute("kernel", kc.kernel);
      j.attribute("formula", kFormula);
      j.attributeObject("gpu", [&] {
        j.attribute("id", gpu.id);
        j.attribute("hbm_gb_per_s", gpu.hbm_gbps);
        j.attribute("fp32_tflops", gpu.fp32_tflops);
        j.attribute("tc16_tflops", gpu.tc16_tflops);
        j.attribute("source", gpu.source);
      });
      if (env)
        j.attributeObject("binding", [&] {
          for (auto &[k, v] : *env)
            j.attribute(k, v);
        });
      j.attributeArray("groups", [&] {
        for (const Cost &c : kc.groups)
          row(c);
      });
      j.attributeBegin("total");
      row(kc.total);
      j.attributeEnd();
    });
    os << "\n";
    return os.str();
  }
  std::ostringstream os;
  os << "kernel " << kc.kernel << ": work, minimum DRAM traffic and speed of light per group\n";
  os << "  " << kFormula << "\n";
  if (env) {
    os << "  binding:";
    for (auto &[k, v] : *env)
      os << " " << k << "=" << v;
    os << "; GPU " << gpu.id << ": " << gpu.hbm_gbps << " GB/s, " << gpu.fp32_tflops
       << " TFLOP/s FP32, " << gpu.tc16_tflops << " TFLOP/s f16/bf16 tensor\n";
  } else {
    os << "  (give --bind DIM=VALUE,... for values and SOL times)\n";
  }
  for (const Cost *c : rows) {
    os << "\n" << (c == &kc.total ? std::string("total") : "group " + c->name) << "\n";
    for (const Field &f : fields) {
      char name[24];
      std::snprintf(name, sizeof name, "  %-14s", f.name);
      os << name << (c->*f.sym).str();
      if (env) {
        auto v = eval(c->*f.sym, *env, c->sums);
        os << " = " << (v ? fmt_count(*v) : "?");
      }
      os << "\n";
    }
    if (env) {
      if (auto s = speed_of_light(*c, *env, gpu))
        os << "  sol           " << fmt_time(s->sol_s) << " ("
           << (s->memory_s >= s->compute_s ? "memory" : "compute") << "-bound: memory "
           << fmt_time(s->memory_s) << ", compute " << fmt_time(s->compute_s) << ")\n";
      else
        os << "  sol           ? (an expression could not be evaluated)\n";
    }
  }
  return os.str();
}

} // namespace etl
