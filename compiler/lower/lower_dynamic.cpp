//===- lower/lower_dynamic.cpp - Dynamic groups: device queue and firing --===//
//
// What this owns: the device side of `schedule dynamic` (layout of the state
// array in etl_abi.h, "Dynamic scheduling"). A dynamic task is an item
// (group, linear) with id off[group] + linear. Its dependency counter starts
// (host, at bind time) at the number of waited event elements that receive
// notifications; items with none are in the queue at launch.
//
//  - Notify: a notifier's acq_rel decrement of an element that returns 1
//    "fires" the element: for every `G waits X[f(i)]` of a dynamic group G,
//    the tasks i with f(i) == element are found through the edge's inverse
//    (EdgeInverse: solved variables computed, the others enumerated, every
//    component re-checked), their counters decremented (acq_rel), and the
//    one that reaches zero is pushed: claim s = tail++, release-store id + 1
//    into slot s (s >= capacity: error word + abort flag; cannot happen as
//    every item is pushed exactly once). An expander claims the n slots of
//    its tasks with one add on tail (s = tail += n) and fills s .. s + n - 1.
//  - Pop: a ticket queue. Thread 0 takes t = head++ (one fetch-and-add,
//    never retried: CTAs do not serialise on head), keeps t in shared memory
//    (kSmemDynTicket) until served, and runs the item that slot t receives.
//    In the dynamic loop it takes a ticket whether or not an item is there
//    and spins on slot t; a static task's wait takes one only if head < tail
//    and looks at the slot once per round (a ticket it still holds when the
//    task runs is served by a later wait or the dynamic loop). Every item
//    counts in `remaining` until it has run and only its ticket's holder
//    runs it, so a holder whose slot is empty while remaining == 0 holds a
//    ticket past the last push and leaves. Each CTA holds at most one
//    unserved ticket: head <= pushes + CTAs; a ticket >= capacity has no
//    slot and is never looked at. The CTA runs the item (etl.dyn.run) and
//    decrements `remaining` after its notifies.
// Memory order: element and counter decrements are acq_rel RMWs, so the
// pusher has acquired every notifier's writes; the slot store is a release
// and the pop an acquire load, so the popping CTA sees them all.
//
//===----------------------------------------------------------------------===//
#include "lower/kernel_lowerer.h"

#include "etl_abi.h"

#include <llvm/IR/Constants.h>

namespace etl {

namespace {
/// Decisions thread 0 broadcasts in a dynamic loop (smem kSmemDynDecision).
/// kDecRunLoop: run, in the dynamic loop (the item takes the CTA's next
/// ticket before its notifies: emit_early_ticket); kDecRun: run, inside a
/// static task's wait (the CTA has its own task to go back to).
constexpr uint32_t kDecReady = 0, kDecRun = 1, kDecPause = 2, kDecStop = 3, kDecRunLoop = 4;
} // namespace

bool KernelLowerer::any_dynamic() const {
  for (const GroupPlan &gp : plan.groups)
    if (gp.dynamic)
      return true;
  return false;
}

bool KernelLowerer::has_dynamic_consumer(int e) const {
  for (const GroupPlan &gp : plan.groups)
    if (gp.dynamic)
      for (const EventUse &u : gp.waits)
        if (u.event == e)
          return true;
  return false;
}

llvm::Value *KernelLowerer::dyn_word(llvm::Value *w) {
  return b.CreateGEP(i32, arg_slot_ptr(ETL_SLOT_DYN), w);
}

void KernelLowerer::declare_dyn_run() {
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, i32, ptr}, false);
  dyn_run = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "etl.dyn.run", mod);
  dyn_run->addFnAttr(llvm::Attribute::NoUnwind);
}

void KernelLowerer::define_dyn_run(const std::vector<llvm::Function *> &group_fns) {
  fn = dyn_run;
  task = nullptr;
  args = fn->getArg(0);
  tid = fn->getArg(1);
  smem = fn->getArg(2);
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  llvm::Value *id = b.CreateLoad(i32, b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemDynItem)));
  // The group is the last dynamic group whose first id is <= id (ids are
  // dense in group order; a group with no tasks shares its successor's).
  llvm::Value *grp = b.getInt32(0), *lin = id;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    if (!plan.groups[g].dynamic)
      continue;
    llvm::Value *off = b.CreateLoad(i32, dyn_word(unsigned(ETL_DYN_GROUP_OFF + g)));
    llvm::Value *in = b.CreateICmpUGE(id, off);
    grp = b.CreateSelect(in, b.getInt32(uint32_t(g)), grp);
    lin = b.CreateSelect(in, b.CreateSub(id, off), lin);
  }
  auto *after = llvm::BasicBlock::Create(ctx, "dyn.done", fn);
  llvm::SwitchInst *sw = b.CreateSwitch(grp, after);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    if (!plan.groups[g].dynamic)
      continue;
    auto *cb = llvm::BasicBlock::Create(ctx, "dyn." + plan.groups[g].name, fn, after);
    sw->addCase(b.getInt32(uint32_t(g)), cb);
    b.SetInsertPoint(cb);
    if (plan.groups[g].decl->data_var >= 0) {
      // Ids [0, P): expanders; then the tasks of the largest domain.
      llvm::Value *pre =
          b.CreateLoad(i32, dyn_word(unsigned(ETL_DYN_GROUP_OFF + plan.groups.size() + g)));
      llvm::Function *ex = lower_expander(int(g));
      fn = dyn_run;
      auto *eb = llvm::BasicBlock::Create(ctx, "expand", fn, after);
      auto *tb = llvm::BasicBlock::Create(ctx, "task", fn, after);
      b.CreateCondBr(b.CreateICmpULT(lin, pre), eb, tb);
      b.SetInsertPoint(eb);
      b.CreateCall(ex, {args, lin, tid, smem});
      b.CreateBr(after);
      b.SetInsertPoint(tb);
      b.CreateCall(group_fns[g], {args, b.CreateSub(lin, pre), tid, smem});
      b.CreateBr(after);
      continue;
    }
    b.CreateCall(group_fns[g], {args, lin, tid, smem});
    b.CreateBr(after);
  }
  b.SetInsertPoint(after);
  m.barrier(b); // its notifies (and pushes) are done
  if_then(b.CreateICmpEQ(tid, b.getInt32(0)),
          [&] { m.atomic_add_acq_rel(b, dyn_word(ETL_DYN_REMAINING), b.getInt32(0xFFFFFFFFu)); });
  b.CreateRetVoid();
}

llvm::Value *KernelLowerer::emit_try_pop(bool wait) {
  auto at = [&](unsigned off) { return b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(off)); };
  llvm::AllocaInst *got = entry_alloca(i1, "popped");
  b.CreateStore(b.getFalse(), got);
  // A ticket: one fetch-and-add of head, never retried. A static task's wait
  // takes one only when an item looks ready (it has its own work coming);
  // the dynamic loop takes one regardless and waits for its slot.
  if_then(b.CreateICmpEQ(b.CreateLoad(i32, at(kSmemDynTicket)), b.getInt32(0)), [&] {
    if (wait) {
      emit_take_ticket();
      return;
    }
    llvm::Value *h = m.load_acquire(b, dyn_word(ETL_DYN_HEAD));
    llvm::Value *t = m.load_acquire(b, dyn_word(ETL_DYN_TAIL));
    if_then(b.CreateICmpULT(h, t), [&] { emit_take_ticket(); });
  });
  llvm::Value *tk = b.CreateLoad(i32, at(kSmemDynTicket));
  if_then(b.CreateICmpNE(tk, b.getInt32(0)), [&] {
    llvm::Value *t = b.CreateSub(tk, b.getInt32(1));
    // A ticket past the capacity has no slot: every item is pushed once, so
    // it is never filled; its holder leaves when `remaining` reaches 0.
    llvm::Value *has_slot = b.CreateICmpULT(t, b.CreateLoad(i32, dyn_word(ETL_DYN_CAPACITY)));
    unsigned slots = unsigned(ETL_DYN_GROUP_OFF + 2 * plan.groups.size());
    llvm::Value *sp = dyn_word(b.CreateAdd(b.getInt64(slots), b.CreateZExt(t, i64)));
    llvm::AllocaInst *val = entry_alloca(i32, "slot");
    auto *head = llvm::BasicBlock::Create(ctx, "slot.head", fn);
    auto *done = llvm::BasicBlock::Create(ctx, "slot.done", fn);
    llvm::AllocaInst *last = wait ? spin_clock() : nullptr;
    b.CreateBr(head);
    b.SetInsertPoint(head);
    b.CreateStore(b.getInt32(0), val);
    if_then(has_slot, [&] { b.CreateStore(m.load_acquire(b, sp), val); });
    llvm::Value *filled = b.CreateICmpNE(b.CreateLoad(i32, val), b.getInt32(0));
    if (!wait) {
      b.CreateBr(done); // looked once; the ticket stays held until served
    } else {
      // Spin until the slot is filled. Every item still to run (pushed or
      // not) counts in `remaining` until it has run, and only this CTA runs
      // the item of its ticket: remaining == 0 means no item will come.
      auto *spin = llvm::BasicBlock::Create(ctx, "slot.spin", fn);
      auto *pause = llvm::BasicBlock::Create(ctx, "slot.pause", fn);
      b.CreateCondBr(filled, done, spin);
      b.SetInsertPoint(spin);
      llvm::Value *rem = m.load_acquire(b, dyn_word(ETL_DYN_REMAINING));
      llvm::Value *ab = spin_abort_flag(last);
      if_then(b.CreateICmpNE(ab, b.getInt32(0)), [&] { b.CreateStore(b.getInt32(1), at(kSmemAbort)); });
      b.CreateCondBr(b.CreateOr(b.CreateICmpEQ(rem, b.getInt32(0)), b.CreateICmpNE(ab, b.getInt32(0))),
                     done, pause);
      b.SetInsertPoint(pause);
      m.spin_pause(b);
      b.CreateBr(head);
    }
    b.SetInsertPoint(done);
    llvm::Value *vv = b.CreateLoad(i32, val);
    if_then(b.CreateICmpNE(vv, b.getInt32(0)), [&] {
      b.CreateStore(b.CreateSub(vv, b.getInt32(1)), at(kSmemDynItem));
      llvm::Value *nstatic = b.CreateLoad(i32, dyn_word(ETL_DYN_NSTATIC));
      b.CreateStore(b.CreateAdd(nstatic, t), at(kSmemPos));
      b.CreateStore(b.getInt32(0), at(kSmemDynTicket)); // served
      b.CreateStore(b.getTrue(), got);
    });
  });
  return b.CreateLoad(i1, got);
}

void KernelLowerer::emit_take_ticket() {
  llvm::Value *t = m.atomic_add_acq_rel(b, dyn_word(ETL_DYN_HEAD), b.getInt32(1));
  b.CreateStore(b.CreateAdd(t, b.getInt32(1)),
                b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemDynTicket)));
}

void KernelLowerer::emit_early_ticket() {
  // Only in the dynamic loop: inside a static task's wait the CTA goes back
  // to its own task next, and a ticket held across that task would keep the
  // item its slot receives waiting for it.
  auto at = [&](unsigned off) { return b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(off)); };
  if_then(b.CreateICmpEQ(tid, b.getInt32(0)), [&] {
    llvm::Value *loop = b.CreateICmpEQ(b.CreateLoad(i32, at(kSmemDynDecision)), b.getInt32(kDecRunLoop));
    llvm::Value *none = b.CreateICmpEQ(b.CreateLoad(i32, at(kSmemDynTicket)), b.getInt32(0));
    if_then(b.CreateAnd(loop, none), [&] { emit_take_ticket(); });
  });
}

llvm::Value *KernelLowerer::emit_push_claim(llvm::Value *n, llvm::Value **fits) {
  llvm::Value *s = m.atomic_add_acq_rel(b, dyn_word(ETL_DYN_TAIL), n);
  llvm::Value *cap = b.CreateLoad(i32, dyn_word(ETL_DYN_CAPACITY));
  *fits = b.CreateAnd(b.CreateICmpULE(s, cap), b.CreateICmpULE(n, b.CreateSub(cap, s)));
  if_then(b.CreateNot(*fits), [&] {
    m.atomic_add_release(b, dyn_word(ETL_DYN_ERROR), b.getInt32(1));
    m.atomic_add_release(b, arg_slot_ptr(ETL_SLOT_ABORT), b.getInt32(1));
  });
  return s;
}

void KernelLowerer::emit_push_store(llvm::Value *s, llvm::Value *id) {
  unsigned slots = unsigned(ETL_DYN_GROUP_OFF + 2 * plan.groups.size());
  llvm::Value *sp = dyn_word(b.CreateAdd(b.getInt64(slots), b.CreateZExt(s, i64)));
  m.atomic_add_release(b, sp, b.CreateAdd(id, b.getInt32(1))); // slot was 0
}

void KernelLowerer::emit_push(llvm::Value *id) {
  if (!push_batch.n) {
    llvm::Value *fits = nullptr;
    llvm::Value *s = emit_push_claim(b.getInt32(1), &fits);
    if_then(fits, [&] { emit_push_store(s, id); });
    return;
  }
  llvm::Value *n = b.CreateLoad(i32, push_batch.n);
  for (unsigned j = 0; j < kPushBatch; ++j) {
    llvm::AllocaInst *e = push_batch.ids[j];
    b.CreateStore(b.CreateSelect(b.CreateICmpEQ(n, b.getInt32(j)), id, b.CreateLoad(i32, e)), e);
  }
  llvm::Value *n1 = b.CreateAdd(n, b.getInt32(1));
  b.CreateStore(n1, push_batch.n);
  if_then(b.CreateICmpEQ(n1, b.getInt32(kPushBatch)), [&] { push_batch_flush(); });
}

void KernelLowerer::push_batch_open() {
  push_batch.n = entry_alloca(i32, "batch.n");
  push_batch.ids.clear();
  for (unsigned j = 0; j < kPushBatch; ++j) {
    push_batch.ids.push_back(entry_alloca(i32, "batch.id"));
    b.CreateStore(b.getInt32(0), push_batch.ids.back());
  }
  b.CreateStore(b.getInt32(0), push_batch.n);
}

void KernelLowerer::push_batch_flush() {
  llvm::Value *n = b.CreateLoad(i32, push_batch.n);
  if_then(b.CreateICmpNE(n, b.getInt32(0)), [&] {
    llvm::Value *fits = nullptr;
    llvm::Value *s = emit_push_claim(n, &fits);
    if_then(fits, [&] {
      for (unsigned j = 0; j < kPushBatch; ++j)
        if_then(b.CreateICmpULT(b.getInt32(j), n), [&] {
          emit_push_store(b.CreateAdd(s, b.getInt32(j)), b.CreateLoad(i32, push_batch.ids[j]));
        });
    });
    b.CreateStore(b.getInt32(0), push_batch.n);
  });
}

void KernelLowerer::push_batch_close() {
  push_batch_flush();
  push_batch = PushBatch();
}

void KernelLowerer::emit_fire(int ev, llvm::Value *rel) {
  const KernelDecl &k = *plan.kernel;
  const EventDecl &ed = k.events[size_t(ev)];
  const TaskDecl *saved_task = task;
  std::vector<llvm::Value *> saved_vars = task_vars;
  // Coordinates of the element (row-major, last fastest).
  std::vector<llvm::Value *> shape;
  for (const ExprPtr &s : ed.shape)
    shape.push_back(index(*s));
  std::vector<llvm::Value *> coord(shape.size());
  llvm::Value *q = rel;
  for (size_t d = shape.size(); d-- > 0;) {
    coord[d] = d == 0 ? q : b.CreateURem(q, shape[d]);
    q = b.CreateUDiv(q, shape[d]);
  }
  llvm::Value *deps_base = b.CreateAdd(
      b.getInt64(ETL_DYN_GROUP_OFF + 2 * plan.groups.size()),
      b.CreateZExt(b.CreateLoad(i32, dyn_word(ETL_DYN_CAPACITY)), i64)); // after the slots
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const GroupPlan &gp = plan.groups[g];
    if (!gp.dynamic)
      continue;
    for (size_t w = 0; w < gp.waits.size(); ++w) {
      const EventUse &use = gp.waits[w];
      if (use.event != ev)
        continue;
      task = gp.decl;
      // A group whose range reads data: its expanders wait, one per task of
      // the variables before that one.
      bool dd = gp.decl->data_var >= 0;
      size_t full_rank = gp.decl->domain.size();
      size_t rank = dd ? size_t(gp.decl->data_var) : full_rank;
      std::vector<llvm::Value *> lo(rank), hi(rank);
      for (size_t v = 0; v < rank; ++v) {
        lo[v] = index(*gp.decl->domain[v].lo);
        hi[v] = index(*gp.decl->domain[v].hi);
      }
      std::vector<llvm::Value *> rest; // later variables: at lo, unused by the edge
      for (size_t v = rank; v < full_rank; ++v)
        rest.push_back(index(*gp.decl->domain[v].lo));
      EdgeInverse inv;
      if (w < gp.wait_inverse.size())
        inv = gp.wait_inverse[w];
      if (inv.solved_by.size() < rank) {
        inv.solved_by.assign(rank, -1);
        inv.coeff.assign(rank, 0);
      }
      // c of each solving component `a*v + c`: the component at v = 0.
      task_vars.assign(full_rank, b.getInt64(0));
      std::vector<llvm::Value *> c(use.idx.size(), nullptr);
      for (size_t v = 0; v < rank; ++v)
        if (int d = inv.solved_by[v]; d >= 0 && !c[size_t(d)])
          c[size_t(d)] = index(*use.idx[size_t(d)]);
      std::vector<llvm::Value *> vals(rank, nullptr);
      std::function<void(size_t)> rec = [&](size_t v) {
        if (v == rank) {
          task_vars = vals;
          task_vars.insert(task_vars.end(), rest.begin(), rest.end());
          llvm::Value *match = b.getTrue();
          for (size_t d = 0; d < use.idx.size(); ++d)
            if (use.idx[d])
              match = b.CreateAnd(match, b.CreateICmpEQ(index(*use.idx[d]), coord[d]));
          if_then(match, [&] {
            llvm::Value *lin = b.getInt64(0);
            for (size_t u = 0; u < rank; ++u)
              lin = b.CreateAdd(b.CreateMul(lin, b.CreateSub(hi[u], lo[u])),
                                b.CreateSub(vals[u], lo[u]));
            llvm::Value *off = b.CreateLoad(i32, dyn_word(unsigned(ETL_DYN_GROUP_OFF + g)));
            llvm::Value *id = b.CreateAdd(off, b.CreateTrunc(lin, i32));
            llvm::Value *dep = dyn_word(b.CreateAdd(deps_base, b.CreateZExt(id, i64)));
            llvm::Value *old = m.atomic_add_acq_rel(b, dep, b.getInt32(0xFFFFFFFFu));
            if_then(b.CreateICmpEQ(old, b.getInt32(1)), [&] { emit_push(id); });
          });
          return;
        }
        int d = inv.solved_by[v];
        if (d < 0) {
          for_range(lo[v], hi[v], b.getInt64(1), [&](llvm::Value *iv) {
            vals[v] = iv;
            rec(v + 1);
          });
          return;
        }
        llvm::Value *a = b.getInt64(uint64_t(inv.coeff[v]));
        llvm::Value *num = b.CreateSub(coord[size_t(d)], c[size_t(d)]);
        llvm::Value *val = b.CreateSDiv(num, a);
        llvm::Value *ok =
            b.CreateAnd(b.CreateICmpEQ(b.CreateSRem(num, a), b.getInt64(0)),
                        b.CreateAnd(b.CreateICmpSGE(val, lo[v]), b.CreateICmpSLT(val, hi[v])));
        if_then(ok, [&] {
          vals[v] = val;
          rec(v + 1);
        });
      };
      rec(0);
    }
  }
  task = saved_task;
  task_vars = saved_vars;
}

llvm::Function *KernelLowerer::lower_expander(int g) {
  const GroupPlan &gp = plan.groups[size_t(g)];
  const TaskDecl &t = *gp.decl;
  llvm::IRBuilderBase::InsertPointGuard guard(b);
  llvm::Function *saved_fn = fn;
  llvm::Value *saved_args = args, *saved_tid = tid, *saved_smem = smem;
  const TaskDecl *saved_task = task;
  std::vector<llvm::Value *> saved_vars = task_vars;
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, i32, i32, ptr}, false);
  fn = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "etl.expand." + gp.name, mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Function *ex = fn;
  args = fn->getArg(0);
  tid = fn->getArg(2);
  smem = fn->getArg(3);
  task = &t;
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::Value *plin = b.CreateZExt(fn->getArg(1), i64);
  if_then(b.CreateICmpEQ(tid, b.getInt32(0)), [&] {
    size_t k = size_t(t.data_var), rank = t.domain.size();
    std::vector<llvm::Value *> lo(rank), ext(rank);
    for (size_t v = 0; v < rank; ++v) {
      const TaskIndexDecl &d = t.domain[v];
      lo[v] = index(*d.lo);
      ext[v] = b.CreateSub(index(d.static_bound ? *d.static_bound : *d.hi), lo[v]);
    }
    task_vars.assign(rank, nullptr);
    llvm::Value *q = plin;
    for (size_t v = k; v-- > 0;) {
      task_vars[v] = b.CreateAdd(lo[v], v == 0 ? q : b.CreateURem(q, ext[v]));
      q = b.CreateUDiv(q, ext[v]);
    }
    for (size_t v = k; v < rank; ++v)
      task_vars[v] = lo[v];
    // The range, evaluated now: its waits are done, so its data is ready.
    llvm::Value *hd = index(*t.domain[k].data_bound);
    llvm::Value *hs = index(*t.domain[k].static_bound);
    llvm::Value *hi = b.CreateSelect(b.CreateICmpSLT(hd, hs), hd, hs);
    llvm::Value *ek = b.CreateSub(hi, lo[k]);
    ek = b.CreateSelect(b.CreateICmpSGT(ek, b.getInt64(0)), ek, b.getInt64(0));
    llvm::Value *rest = b.getInt64(1);
    for (size_t v = k + 1; v < rank; ++v)
      rest = b.CreateMul(rest, ext[v]);
    llvm::Value *n = b.CreateTrunc(b.CreateMul(ek, rest), i32);
    m.atomic_add_acq_rel(b, dyn_word(ETL_DYN_REMAINING), n);
    // Settle: each notified element holds one token for this expander.
    llvm::Value *events = arg_slot_ptr(ETL_SLOT_EVENTS);
    llvm::Value *delta = b.CreateSub(n, b.getInt32(1));
    push_batch_open();
    for (const EventUse &use : gp.notifies)
      for_each_event_element(
          use,
          [&](llvm::Value *off) {
            llvm::Value *old = m.atomic_add_acq_rel(b, b.CreateGEP(i32, events, off), delta);
            llvm::Value *rel = b.CreateSub(off, arg_slot_i64(event_slot(use.event)));
            if_then(b.CreateICmpEQ(b.CreateAdd(old, delta), b.getInt32(0)),
                    [&] { emit_fire(use.event, rel); });
          },
          /*notify=*/true);
    push_batch_close();
    // Push the tasks (ids after the expanders, over the largest domain).
    llvm::Value *base = b.CreateAdd(
        b.CreateLoad(i32, dyn_word(unsigned(ETL_DYN_GROUP_OFF + g))),
        b.CreateLoad(i32, dyn_word(unsigned(ETL_DYN_GROUP_OFF + plan.groups.size() + g))));
    // One claim of n slots on tail for the batch, then a store per slot.
    llvm::AllocaInst *j = entry_alloca(i32, "push.j");
    b.CreateStore(b.getInt32(0), j);
    llvm::Value *s0 = nullptr;
    std::function<void(size_t, llvm::Value *)> rec = [&](size_t v, llvm::Value *acc) {
      if (v == rank) {
        llvm::Value *jv = b.CreateLoad(i32, j);
        emit_push_store(b.CreateAdd(s0, jv), b.CreateAdd(base, b.CreateTrunc(acc, i32)));
        b.CreateStore(b.CreateAdd(jv, b.getInt32(1)), j);
        return;
      }
      llvm::Value *hiv = v == k ? ek : ext[v];
      for_range(b.getInt64(0), hiv, b.getInt64(1),
                [&](llvm::Value *iv) { rec(v + 1, b.CreateAdd(b.CreateMul(acc, ext[v]), iv)); });
    };
    if_then(b.CreateICmpNE(n, b.getInt32(0)), [&] {
      llvm::Value *fits = nullptr;
      s0 = emit_push_claim(n, &fits);
      if_then(fits, [&] { rec(k, plin); });
    });
  });
  b.CreateRetVoid();
  fn = saved_fn;
  args = saved_args;
  tid = saved_tid;
  smem = saved_smem;
  task = saved_task;
  task_vars = saved_vars;
  return ex;
}

llvm::Value *KernelLowerer::all_waits_ready(const GroupPlan &gp) {
  llvm::AllocaInst *ok = entry_alloca(i1, "ready");
  b.CreateStore(b.getTrue(), ok);
  llvm::Value *events = arg_slot_ptr(ETL_SLOT_EVENTS);
  // In clause order, each clause only once the earlier ones are done: an
  // earlier wait may be what makes a later index's tensor data ready.
  for (const EventUse &use : gp.waits)
    if_then(b.CreateLoad(i1, ok), [&] {
      for_each_event_element(
          use,
          [&](llvm::Value *off) {
            llvm::Value *v = m.load_acquire(b, b.CreateGEP(i32, events, off));
            if_then(b.CreateICmpNE(v, b.getInt32(0)), [&] { b.CreateStore(b.getFalse(), ok); });
          },
          /*notify=*/false);
    });
  llvm::Value *aborted = b.CreateICmpNE(
      b.CreateLoad(i32, b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemAbort))), b.getInt32(0));
  return b.CreateAnd(b.CreateLoad(i1, ok), b.CreateNot(aborted));
}

void KernelLowerer::emit_index_error(int event, size_t dim, llvm::Value *value, llvm::Value *extent,
                               bool notify) {
  auto word = [&](unsigned w) {
    return b.CreateGEP(i32, arg_slot_ptr(ETL_SLOT_ERROR), b.getInt64(w));
  };
  llvm::Value *old = m.atomic_cas(b, word(ETL_ERR_SET), b.getInt32(0),
                                  b.getInt32(notify ? ETL_ERR_SET_NOTIFY : ETL_ERR_SET_WAIT));
  if_then(b.CreateICmpEQ(old, b.getInt32(0)), [&] {
    b.CreateStore(b.getInt32(uint32_t(cur_group)), word(ETL_ERR_GROUP));
    b.CreateStore(cur_lin ? cur_lin : b.getInt32(0), word(ETL_ERR_LINEAR));
    b.CreateStore(b.getInt32(uint32_t(event)), word(ETL_ERR_EVENT));
    b.CreateStore(b.getInt32(uint32_t(dim)), word(ETL_ERR_DIM));
    b.CreateStore(b.CreateTrunc(value, i32), word(ETL_ERR_VALUE_LO));
    b.CreateStore(b.CreateTrunc(b.CreateLShr(value, b.getInt64(32)), i32), word(ETL_ERR_VALUE_HI));
    b.CreateStore(b.CreateTrunc(extent, i32), word(ETL_ERR_EXTENT));
  });
  m.atomic_add_release(b, arg_slot_ptr(ETL_SLOT_ABORT), b.getInt32(1));
  b.CreateStore(b.getInt32(1), b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemAbort)));
}

void KernelLowerer::emit_dyn_loop(llvm::BasicBlock *exit) {
  auto at = [&](unsigned off) { return b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(off)); };
  auto *head = llvm::BasicBlock::Create(ctx, "dyn.head", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  if_then(b.CreateICmpEQ(tid, b.getInt32(0)), [&] {
    b.CreateStore(b.getInt32(kDecStop), at(kSmemDynDecision));
    llvm::Value *ab = poll_control(); // the control block, every 16th item or ~1 ms
    if_then(b.CreateICmpEQ(ab, b.getInt32(0)), [&] {
      // A ticket taken early (the last item's emit_early_ticket): straight
      // to its slot, whose spin reads `remaining` only when it is empty.
      llvm::Value *held = b.CreateICmpNE(b.CreateLoad(i32, at(kSmemDynTicket)), b.getInt32(0));
      llvm::AllocaInst *go = entry_alloca(i1, "dyn.go");
      b.CreateStore(held, go);
      if_then(b.CreateNot(held), [&] {
        llvm::Value *rem = m.load_acquire(b, dyn_word(ETL_DYN_REMAINING));
        b.CreateStore(b.CreateICmpNE(rem, b.getInt32(0)), go);
      });
      if_then(b.CreateLoad(i1, go), [&] { emit_pop_decision(/*wait=*/true); });
    });
  });
  m.barrier(b);
  llvm::Value *dec = b.CreateLoad(i32, at(kSmemDynDecision));
  m.barrier(b); // everyone has read it before thread 0 writes the next one
  auto *run = llvm::BasicBlock::Create(ctx, "dyn.run", fn);
  llvm::SwitchInst *sw = b.CreateSwitch(dec, head);
  sw->addCase(b.getInt32(kDecRunLoop), run);
  sw->addCase(b.getInt32(kDecStop), exit);
  b.SetInsertPoint(run);
  b.CreateCall(dyn_run, {args, tid, smem});
  b.CreateBr(head);
}

/// Thread 0: try to pop a ready dynamic item and decide, in shared memory,
/// whether the CTA runs it, stops (abort) or pauses and looks again.
void KernelLowerer::emit_pop_decision(bool wait) {
  auto at = [&](unsigned off) { return b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(off)); };
  llvm::Value *got = emit_try_pop(wait);
  llvm::Value *aborted = b.CreateICmpNE(b.CreateLoad(i32, at(kSmemAbort)), b.getInt32(0));
  // A waiting pop comes back empty only on abort or once `remaining` is 0:
  // stop (a pause would come back to a held ticket and spin again).
  llvm::Value *dec = b.CreateSelect(
      got, b.getInt32(wait ? kDecRunLoop : kDecRun),
      wait ? b.getInt32(kDecStop)
           : b.CreateSelect(aborted, b.getInt32(kDecStop), b.getInt32(kDecPause)));
  b.CreateStore(dec, at(kSmemDynDecision));
  if_then(b.CreateICmpEQ(dec, b.getInt32(kDecPause)), [&] { m.spin_pause(b); });
}

void KernelLowerer::emit_static_wait_loop(const GroupPlan &gp, int g, llvm::Value *lin,
                                    llvm::BasicBlock *out) {
  auto at = [&](unsigned off) { return b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(off)); };
  llvm::Value *is0 = b.CreateICmpEQ(tid, b.getInt32(0));
  llvm::AllocaInst *pos = entry_alloca(i32, "pos");
  llvm::AllocaInst *last = nullptr;
  if_then(is0, [&] {
    b.CreateStore(b.CreateLoad(i32, at(kSmemPos)), pos);
    last = spin_clock();
  });
  auto *head = llvm::BasicBlock::Create(ctx, "wait.loop", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  if_then(is0, [&] {
    b.CreateStore(b.getInt32(kDecReady), at(kSmemDynDecision));
    llvm::Value *ready = all_waits_ready(gp);
    if_then(b.CreateNot(ready), [&] {
      llvm::Value *aborted = b.CreateICmpNE(spin_abort_flag(last), b.getInt32(0));
      b.CreateStore(b.getInt32(kDecStop), at(kSmemDynDecision));
      if_then(aborted, [&] { b.CreateStore(b.getInt32(1), at(kSmemAbort)); });
      if_then(b.CreateNot(aborted), [&] { emit_pop_decision(/*wait=*/false); });
    });
  });
  m.barrier(b);
  llvm::Value *dec = b.CreateLoad(i32, at(kSmemDynDecision));
  m.barrier(b);
  auto *run = llvm::BasicBlock::Create(ctx, "wait.run", fn);
  auto *go = llvm::BasicBlock::Create(ctx, "waited", fn);
  llvm::SwitchInst *sw = b.CreateSwitch(dec, head);
  sw->addCase(b.getInt32(kDecReady), go);
  sw->addCase(b.getInt32(kDecRun), run);
  sw->addCase(b.getInt32(kDecStop), out);
  b.SetInsertPoint(run);
  if (!ring_ops.empty()) { // the item's shared memory overlaps the rings' copies in flight
    m.async_wait(b, 0);
    m.barrier(b);
  }
  b.CreateCall(dyn_run, {args, tid, smem});
  m.task_begin(b, b.getInt32(uint32_t(g)), lin); // the nested item replaced it
  if (!prefetch_ops.empty() || !ring_ops.empty())
    prefetch_reissue(); // the item's registers and shared memory were its own
  b.CreateBr(head);
  b.SetInsertPoint(go);
  if_then(is0, [&] { b.CreateStore(b.CreateLoad(i32, pos), at(kSmemPos)); });
}

} // namespace etl
