//===- lower/backend.cpp - The back-end pipeline --------------------------===//
//
// What this owns: run_backend. It turns the task graph into a KernelPlan
// (groups with their wait/notify index expressions), and for each target
// builds a fresh LLVM module: machine setup, the lowering (KernelLowerer), kernel
// annotations, verification + the standard pipeline (target/optimize.cpp),
// then code emission by the target's machine.
//
//===----------------------------------------------------------------------===//
#include "lower/backend.h"

#include "lower/kernel_lowerer.h"
#include "tile/passes.h"
#include "target/optimize.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace etl {

/// Lowers `plan` for every target.
static BackendResult run_plan(const KernelPlan &plan, const std::vector<std::string> &targets,
                              const BackendOptions &opts) {
  BackendResult res;
  res.threads_per_cta = opts.threads_per_cta;
  for (const GroupPlan &g : plan.groups)
    if (!g.decl) {
      res.error = "task group '" + g.name + "' has no declaration";
      return res;
    }
  MachineOptions mopts;
  mopts.fmad = opts.fmad;
  res.tma_maps = opts.tiles->tma_maps;
  for (const std::string &t : targets) {
    std::string err;
    std::unique_ptr<Machine> m;
    const TargetDesc *desc = find_target(t);
    if (desc)
      m = make_machine(*desc, mopts, err);
    if (m && opts.wrap_machine)
      m = opts.wrap_machine(std::move(m));
    else
      err = "unknown target '" + t + "' (expected " + target_names() + ")";
    if (!m) {
      res.error = err;
      return res;
    }
    llvm::LLVMContext ctx;
    llvm::Module mod(plan.kernel->name, ctx);
    m->init_module(mod);
    unsigned smem = 0;
    try {
      KernelLowerer L(plan, *m, mod, opts.threads_per_cta);
      llvm::Function *k = L.lower_kernel();
      smem = (L.smem_bytes() + 15u) & ~15u;
      if (res.remarks.empty())
        res.remarks = L.remarks; // the same decisions for every target
      if (res.prefetched.empty())
        res.prefetched = L.prefetched;
      if (res.pipelined.empty())
        res.pipelined = L.pipelined;
      if (res.ring_prefetched.empty())
        res.ring_prefetched = L.ring_prefetched;
      m->finish_kernel(mod, k, opts.threads_per_cta, smem);
    } catch (const LowerError &e) {
      res.error = std::string("lowering kernel '") + plan.kernel->name + "': " + e.what();
      return res;
    }
    if (desc->smem_limit != 0 && smem > desc->smem_limit) {
      res.error = "kernel '" + plan.kernel->name + "' needs " + std::to_string(smem) +
                  " bytes of shared memory per CTA; " + t + " allows at most " +
                  std::to_string(desc->smem_limit) + " (target/targets.def)";
      res.resource_limit = true;
      return res;
    }
    res.smem_bytes = smem;
    if (!optimize_module(mod, m->target_machine(), opts.opt_level, err)) {
      res.error = t + ": " + err;
      return res;
    }
    TargetOutput out;
    out.target = t;
    llvm::raw_string_ostream os(out.llvm_ir);
    mod.print(os, nullptr);
    os.flush();
    if (!m->emit(mod, out.code, err)) {
      res.error = t + ": " + err;
      return res;
    }
    res.outputs.push_back(std::move(out));
  }
  res.ok = true;
  return res;
}

static void largest_in(const Expr &e, long long &best) {
  if (e.type.is_tile()) {
    long long n = 1;
    for (int64_t d : e.type.tile_shape)
      n *= d;
    best = std::max(best, n);
  }
  for (const ExprPtr &a : e.args)
    if (a)
      largest_in(*a, best);
  for (const KwArg &kw : e.kwargs)
    if (kw.value)
      largest_in(*kw.value, best);
}

static void largest_in(const std::vector<StmtPtr> &body, long long &best) {
  for (const StmtPtr &s : body) {
    for (const ExprPtr *x : {&s->value, &s->lo, &s->hi, &s->step})
      if (*x)
        largest_in(**x, best);
    largest_in(s->body, best);
    largest_in(s->else_body, best);
  }
}

long long largest_tile(const KernelDecl &k) {
  long long best = 0;
  for (const TaskDecl &t : k.tasks)
    largest_in(t.body, best);
  return best;
}

unsigned pick_threads(const KernelDecl &k, const std::vector<std::string> &targets) {
  long long tile = largest_tile(k);
  unsigned threads = 0;
  for (const std::string &name : targets)
    if (const TargetDesc *t = find_target(name))
      threads = std::max(threads, default_threads(*t, tile));
  return threads ? threads : 128;
}

BackendResult run_backend(const Program &p, const KernelDecl &k, const TaskGraph &g,
                          const std::vector<std::string> &targets, const BackendOptions &opts) {
  KernelPlan plan;
  plan.program = &p;
  plan.kernel = &k;
  plan.smem_budget = (opts.target ? *opts.target : target_info(targets)).smem_budget;
  auto edge_use = [&](int ei) {
    const Edge &e = g.edges.at(size_t(ei));
    EventUse u;
    u.event = e.event;
    for (size_t d = 0; d < e.indices.size(); ++d) {
      const Expr *x = e.indices[d].star ? nullptr : e.indices[d].expr;
      if (!e.indices[d].star && !x && e.ref && d < e.ref->indices.size())
        x = e.ref->indices[d].get();
      u.idx.push_back(x);
    }
    if (e.indices.empty() && e.ref)
      for (const ExprPtr &x : e.ref->indices)
        u.idx.push_back(x.get());
    return u;
  };
  if (!valid_threads_per_cta(opts.threads_per_cta)) {
    BackendResult res;
    res.error = "threads_per_cta must be 32, 64, 128, 256, 512 or 1024";
    return res;
  }
  if (!opts.tiles) {
    BackendResult res;
    res.error = "no tile IR for kernel '" + k.name + "'";
    return res;
  }
  for (const TaskGroup &tg : g.groups) {
    GroupPlan gp;
    gp.name = tg.name;
    gp.decl = tg.decl;
    gp.dynamic = tg.dynamic;
    for (int w : tg.waits) {
      gp.waits.push_back(edge_use(w));
      gp.wait_inverse.push_back(g.edges.at(size_t(w)).inverse);
    }
    for (int n : tg.notifies)
      gp.notifies.push_back(edge_use(n));
    for (const TileFunc &f : opts.tiles->funcs)
      if (f.name == tg.name && tg.decl) {
        BackendResult res;
        if (smem_over_budget(f)) { // tile/smem.cpp's plan exceeds what the targets allow
          res.error = "task '" + tg.name + "' needs " + std::to_string(f.smem_bytes) +
                      " bytes of shared memory per CTA; the targets allow at most " +
                      std::to_string(f.smem_budget) + " (target/targets.def)";
          res.resource_limit = true;
          return res;
        }
        if (std::string gap = tile_lowering_gap(f, k, *tg.decl, opts.threads_per_cta);
            !gap.empty()) {
          res.error = "task '" + tg.name + "': the tile IR has no lowering of " + gap;
          return res;
        }
        gp.tile = &f;
      }
    plan.groups.push_back(std::move(gp));
  }
  return run_plan(plan, targets, opts);
}

} // namespace etl
