//===- lower/lower_kernel.cpp - The persistent loop, waits, notifies ------===//
//
// What this owns: the megakernel's skeleton. `etl_main(args)` is a persistent
// loop: thread 0 takes the next (group, linear) pair of its CTA's static queue
// (args[QUEUE], args[QUEUE_OFFS]; CTA c owns pairs [offs[c], offs[c+1])) and
// broadcasts it through shared memory; the CTA dispatches to that group's
// internal function, which decodes `linear` into the domain indices
// (row-major, last variable fastest), waits on its events (thread 0 spins
// with acquire loads, then a CTA barrier), runs the body (its tile IR,
// lower_tile_control.cpp; event index arithmetic in lower_index.cpp) and
// notifies (barrier, thread 0 fences and decrements with release atomics).
// Task fast path: no host-mapped memory. The control block (abort flag
// args[ABORT], per-CTA progress words) is a PCIe round trip away, and the
// GPU serves those reads one after another (an H100 took about 1 us per CTA
// when each CTA read it before its first task: 140 us until the last CTA
// started). Thread 0 reads the abort flag and writes its progress word every
// 16th task or after ~1 ms (poll_control), writes the word at the end, and
// reads the flag in a spin-wait once ~1 ms has passed since the wait began
// or last read it (spin_abort_flag); nothing is read at the start. A CTA that
// sees the abort flag publishes it in shared memory so all its threads leave. Thread 0 fetches
// the next static-queue entry while the current task runs.
// Timeline (args[TIMELINE] != 0): thread 0 also broadcasts the queue
// position p and writes record p's start (after the waits) and end (after
// the body, before the notifies); see etl_abi.h.
// With `schedule dynamic` groups (lower_dynamic.cpp) a CTA whose static
// queue is empty pops dynamic items, a static task's wait runs ready dynamic
// items while it waits, and a notify that completes an element fires it.
//
//===----------------------------------------------------------------------===//
#include "lower/kernel_lowerer.h"

#include "etl_abi.h"

#include <llvm/IR/Constants.h>

#include <algorithm>
#include <cstdlib>

namespace etl {

unsigned KernelLowerer::smem_bytes() const { return unsigned(kSmemScratch + max_scratch_elems * 4); }

//===-- The persistent loop ----------------------------------------------===//

llvm::Function *KernelLowerer::lower_kernel() {
  written = written_tensors(*plan.kernel);
  std::vector<llvm::Function *> groups;
  if (any_dynamic())
    declare_dyn_run();
  for (size_t g = 0; g < plan.groups.size(); ++g)
    groups.push_back(lower_group(int(g)));
  if (any_dynamic())
    define_dyn_run(groups);

  llvm::Function *k = m.create_kernel(mod);
  fn = k;
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", k);
  b.SetInsertPoint(entry);
  args = k->getArg(0);
  tid = m.thread_id(b);
  llvm::Value *cta = m.cta_id(b);
  smem = m.shared_base(b);
  llvm::Value *is0 = b.CreateICmpEQ(tid, b.getInt32(0));
  llvm::AllocaInst *cursor = entry_alloca(i32, "cursor");
  llvm::AllocaInst *end = entry_alloca(i32, "end");
  llvm::AllocaInst *next_grp = entry_alloca(i32, "next.group");
  llvm::AllocaInst *next_lin = entry_alloca(i32, "next.linear");
  poll_since = entry_alloca(i32, "poll.since");
  poll_last = entry_alloca(i64, "poll.last");
  auto smem_at = [&](unsigned off) { return b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(off)); };
  // Thread 0: queue entry `at` (i32) into the prefetch registers, if it exists.
  auto prefetch = [&](llvm::Value *at) {
    if_then(b.CreateICmpULT(at, b.CreateLoad(i32, end)), [&] {
      llvm::Value *q = arg_slot_ptr(ETL_SLOT_QUEUE);
      llvm::Value *i = b.CreateMul(b.CreateZExt(at, i64), b.getInt64(2));
      b.CreateStore(b.CreateLoad(i32, b.CreateGEP(i32, q, i)), next_grp);
      b.CreateStore(b.CreateLoad(i32, b.CreateGEP(i32, q, b.CreateAdd(i, b.getInt64(1)))),
                    next_lin);
    });
  };

  if_then(is0, [&] {
    llvm::Value *offs = arg_slot_ptr(ETL_SLOT_QUEUE_OFFS);
    llvm::Value *c64 = b.CreateZExt(cta, i64);
    llvm::Value *first = b.CreateLoad(i32, b.CreateGEP(i32, offs, c64));
    b.CreateStore(first, cursor);
    b.CreateStore(b.CreateLoad(i32, b.CreateGEP(i32, offs, b.CreateAdd(c64, b.getInt64(1)))), end);
    b.CreateStore(b.getInt32(0), smem_at(kSmemAbort));
    if (any_dynamic())
      b.CreateStore(b.getInt32(0), smem_at(kSmemDynTicket)); // no queue ticket held
    // The task count starts at 0 (the runtime zeroes the control block's
    // words before each launch), and the first poll comes after
    // kPollEveryTasks tasks or kPollEveryNs: no host-mapped read before the
    // first task, where 132 CTAs' reads would queue one behind another.
    b.CreateStore(b.getInt32(0), smem_at(kSmemProgress));
    b.CreateStore(b.getInt32(0), poll_since);
    b.CreateStore(m.clock_ns(b), poll_last);
    b.CreateStore(b.getInt32(kExitGroup), next_grp);
    b.CreateStore(b.getInt32(0), next_lin);
    prefetch(first);
  });
  auto *loop = llvm::BasicBlock::Create(ctx, "persistent", k);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  if_then(is0, [&] {
    llvm::Value *ab = poll_control();
    llvm::Value *cur = b.CreateLoad(i32, cursor);
    llvm::Value *has = b.CreateAnd(b.CreateICmpULT(cur, b.CreateLoad(i32, end)),
                                   b.CreateICmpEQ(ab, b.getInt32(0)));
    b.CreateStore(b.getInt32(kExitGroup), smem_at(kSmemGroup));
    if_then(has, [&] {
      // The entry was fetched while the previous task ran; fetch the next
      // one now, while this one runs (its load is not waited for until the
      // next iteration reads the registers).
      b.CreateStore(b.CreateLoad(i32, next_grp), smem_at(kSmemGroup));
      b.CreateStore(b.CreateLoad(i32, next_lin), smem_at(kSmemLinear));
      b.CreateStore(cur, smem_at(kSmemPos));
      llvm::Value *nxt = b.CreateAdd(cur, b.getInt32(1));
      b.CreateStore(nxt, cursor);
      prefetch(nxt);
    });
  });
  m.barrier(b);
  llvm::Value *grp = b.CreateLoad(i32, smem_at(kSmemGroup));
  llvm::Value *lin = b.CreateLoad(i32, smem_at(kSmemLinear));
  auto *ret = llvm::BasicBlock::Create(ctx, "exit", k);
  auto *after = llvm::BasicBlock::Create(ctx, "task.done", k);
  // Static queue done (or abort): with dynamic groups, pop until none remain.
  auto *no_static = ret;
  if (any_dynamic()) {
    no_static = llvm::BasicBlock::Create(ctx, "dynamic", k);
    llvm::IRBuilderBase::InsertPointGuard guard(b);
    b.SetInsertPoint(no_static);
    emit_dyn_loop(ret);
  }
  llvm::SwitchInst *sw = b.CreateSwitch(grp, no_static, unsigned(groups.size()));
  for (size_t g = 0; g < groups.size(); ++g) {
    auto *cb = llvm::BasicBlock::Create(ctx, "group." + plan.groups[g].name, k, after);
    sw->addCase(b.getInt32(uint32_t(g)), cb);
    b.SetInsertPoint(cb);
    b.CreateCall(groups[g], {args, lin, tid, smem});
    b.CreateBr(after);
  }
  b.SetInsertPoint(after);
  // Every thread is done with this task's shared memory before thread 0
  // writes the next queue entry; the abort flag is read by all.
  m.barrier(b);
  llvm::Value *aborted = b.CreateLoad(i32, smem_at(kSmemAbort));
  b.CreateCondBr(b.CreateICmpNE(aborted, b.getInt32(0)), ret, loop);
  b.SetInsertPoint(ret);
  // The CTA's final task count, for the host (once per launch).
  if_then(is0, [&] { publish_progress(cta); });
  b.CreateRetVoid();
  poll_since = poll_last = nullptr;
  return k;
}

llvm::Value *KernelLowerer::poll_control() {
  // Host-mapped memory is a PCIe round trip (about 1 us): the task loop
  // touches it every kPollEveryTasks-th time it comes here, or when
  // kPollEveryNs passed since the last time; spin-waits read the abort flag
  // on their own while they back off.
  llvm::Value *since = b.CreateAdd(b.CreateLoad(i32, poll_since), b.getInt32(1));
  llvm::Value *now = m.clock_ns(b);
  llvm::Value *due = b.CreateOr(
      b.CreateICmpUGT(since, b.getInt32(kPollEveryTasks)),
      b.CreateICmpUGE(b.CreateSub(now, b.CreateLoad(i64, poll_last)), b.getInt64(kPollEveryNs)));
  b.CreateStore(since, poll_since);
  llvm::AllocaInst *ab = entry_alloca(i32, "abort");
  b.CreateStore(b.getInt32(0), ab);
  if_then(due, [&] {
    llvm::LoadInst *flag = b.CreateLoad(i32, arg_slot_ptr(ETL_SLOT_ABORT));
    flag->setVolatile(true);
    b.CreateStore(flag, ab);
    publish_progress(m.cta_id(b));
    b.CreateStore(b.getInt32(1), poll_since);
    b.CreateStore(now, poll_last);
  });
  return b.CreateLoad(i32, ab);
}

llvm::AllocaInst *KernelLowerer::spin_clock() {
  llvm::AllocaInst *last = entry_alloca(i64, "spin.last");
  b.CreateStore(m.clock_ns(b), last);
  return last;
}

llvm::Value *KernelLowerer::spin_abort_flag(llvm::AllocaInst *last) {
  llvm::AllocaInst *ab = entry_alloca(i32, "spin.abort");
  b.CreateStore(b.getInt32(0), ab);
  llvm::Value *now = m.clock_ns(b);
  llvm::Value *due =
      b.CreateICmpUGE(b.CreateSub(now, b.CreateLoad(i64, last)), b.getInt64(kPollEveryNs));
  if_then(due, [&] {
    llvm::LoadInst *flag = b.CreateLoad(i32, arg_slot_ptr(ETL_SLOT_ABORT));
    flag->setVolatile(true);
    b.CreateStore(flag, ab);
    b.CreateStore(now, last);
  });
  return b.CreateLoad(i32, ab);
}

void KernelLowerer::publish_progress(llvm::Value *cta) {
  llvm::Value *cnt = b.CreateLoad(i32, b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemProgress)));
  b.CreateStore(cnt, progress_word(cta))->setVolatile(true);
}

//===-- One task group ---------------------------------------------------===//

llvm::Function *KernelLowerer::lower_group(int g) {
  const GroupPlan &gp = plan.groups[size_t(g)];
  const TileFunc *tile = gp.tile;
  if (!tile) // run_backend gives every group its tile IR or stops
    throw LowerError("task '" + gp.name + "' has no tile IR");
  task = gp.decl;
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, i32, i32, ptr}, false);
  fn = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "etl.task." + gp.name, mod);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  args = fn->getArg(0);
  llvm::Value *lin = fn->getArg(1);
  cur_group = g;
  cur_lin = lin;
  tid = fn->getArg(2);
  smem = fn->getArg(3);
  task_vars.clear();
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);

  // Domain: var k = lo_k + (linear / stride_k) % extent_k, last var fastest.
  size_t rank = task->domain.size();
  std::vector<llvm::Value *> lo(rank), ext(rank);
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = index(*task->domain[d].lo);
    // A range that reads data: tasks are numbered over its largest extent.
    const TaskIndexDecl &td = task->domain[d];
    ext[d] = b.CreateSub(index(td.static_bound ? *td.static_bound : *td.hi), lo[d]);
  }
  task_vars.assign(rank, nullptr);
  llvm::Value *stride = b.getInt64(1);
  llvm::Value *lin64 = b.CreateZExt(lin, i64);
  for (size_t d = rank; d-- > 0;) {
    llvm::Value *q = b.CreateUDiv(lin64, stride);
    task_vars[d] = b.CreateAdd(lo[d], d == 0 ? q : b.CreateURem(q, ext[d]));
    stride = b.CreateMul(stride, ext[d]);
  }

  m.task_begin(b, b.getInt32(uint32_t(g)), lin);
  hoisted_ops.clear();
  pipelined_loads = 0;
  emit_prefetch(gp, *tile);
  if (!gp.waits.empty() && !gp.dynamic && any_dynamic()) {
    auto *out = llvm::BasicBlock::Create(ctx, "aborted", fn);
    llvm::BasicBlock *here = b.GetInsertBlock();
    b.SetInsertPoint(out);
    if (ring_prefetched.back().second)
      m.async_wait(b, 0); // no copy lands after the task left
    m.task_end(b);
    b.CreateRetVoid();
    b.SetInsertPoint(here);
    emit_static_wait_loop(gp, g, lin, out);
    prefetch_reload();
  } else if (!gp.waits.empty() && !gp.dynamic) { // dynamic tasks are pushed when ready
    emit_event_ops(gp, /*wait=*/true);
    m.barrier(b);
    auto *go = llvm::BasicBlock::Create(ctx, "waited", fn);
    auto *out = llvm::BasicBlock::Create(ctx, "aborted", fn);
    llvm::Value *ab = b.CreateLoad(i32, b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemAbort)));
    b.CreateCondBr(b.CreateICmpNE(ab, b.getInt32(0)), out, go);
    b.SetInsertPoint(out);
    if (ring_prefetched.back().second)
      m.async_wait(b, 0); // no copy lands after the task left
    m.task_end(b);
    b.CreateRetVoid();
    b.SetInsertPoint(go);
  }
  emit_data_notify_release(gp);
  timeline_mark(/*start=*/true);
  lower_tile_body(*tile); // lower_tile_control.cpp
  if (gp.dynamic)
    emit_early_ticket(); // lower_dynamic.cpp
  if (!gp.notifies.empty()) {
    m.barrier(b); // every thread's stores are done
    timeline_mark(/*start=*/false);
    emit_event_ops(gp, /*wait=*/false);
  } else {
    // The end counts once every thread is done; the branch is CTA-uniform.
    if_then(b.CreateIsNotNull(arg_slot_ptr(ETL_SLOT_TIMELINE)), [&] { m.barrier(b); });
    timeline_mark(/*start=*/false);
  }
  mark_progress();
  m.task_end(b);
  b.CreateRetVoid();
  pipelined.emplace_back(gp.name, pipelined_loads);
  return fn;
}

bool BodyLowerer::prefetch_on() {
  // ETL_PREFETCH=0 keeps every load where the program has it (for
  // before/after measurements).
  const char *env = std::getenv("ETL_PREFETCH");
  return !(env && std::string(env) == "0");
}

void KernelLowerer::emit_prefetch(const GroupPlan &gp, const TileFunc &tile) {
  // A dynamic task is pushed once its waits are done: nothing to hide.
  size_t n = 0, stages = 0;
  prefetch_ops.clear();
  prefetch_slots.clear();
  ring_ops.clear();
  if (!gp.waits.empty() && !gp.dynamic && prefetch_on()) {
    std::vector<const TOp *> ops = tile_prefetch(tile, *plan.kernel, written);
    // The K loops' rings: their first stages of weights (prefetch.cpp).
    // Not yet in kernels with dynamic groups unless ETL_RING_PREFETCH=all:
    // there qwen3_decode's nine groups that would copy before their waits
    // spilled on sm_80 and sm_90 (40-56 bytes at 255 registers; decode_layer
    // did not), and the rule that keeps it within registers is not found yet.
    // KNOWN BUG: with the lean ring copies the re-issue after a dynamic item
    // races under the sim's check (ring_prefetch_test.cpp): do not use
    // ETL_RING_PREFETCH=all until it is fixed.
    const char *rp = std::getenv("ETL_RING_PREFETCH");
    RingPrefetch ring;
    if (!any_dynamic() || (rp && std::string(rp) == "all"))
      ring = ring_prefetch(tile, *plan.kernel, written);
    if (!ops.empty() || !ring.ops.empty())
      tile_begin(tile);
    ring_issue(ring.ops);
    for (const TOp *op : ring.ops)
      if (op->kind == TileOpKind::AsyncCopy)
        hoisted_ops.insert(op); // the alloc and the commits stay in the body too
    for (const TOp *op : ops) {
      tile_op(*op);
      hoisted_ops.insert(op);
    }
    if (any_dynamic()) { // the wait may run dynamic items: see kernel_lowerer.h
      ring_ops = ring.ops;
      prefetch_ops = ops;
      if (!ops.empty())
        prefetch_store();
    }
    n = ops.size();
    stages = ring.stages;
  }
  prefetched.emplace_back(gp.name, n);
  ring_prefetched.emplace_back(gp.name, stages);
}

void KernelLowerer::ring_issue(const std::vector<const TOp *> &ops) {
  // Their thread coordinates and argument loads are their own (an opaque
  // thread index, loads in place): LLVM would otherwise merge them with the
  // body's or a re-issue's and keep them live across the wait and the
  // dynamic items it runs (decode_layer spilled on sm_80).
  if (ops.empty())
    return;
  llvm::Value *const plain_tid = tid;
  const auto saved = tcoord_cache;
  tid = b.CreateAdd(tid, b.CreateTrunc(m.opaque_zero(b, b.getInt64Ty()), tid->getType()));
  tcoord_cache.clear();
  args_in_place = true;
  for (const TOp *op : ops)
    tile_op(*op);
  args_in_place = false;
  tid = plain_tid;
  tcoord_cache = saved;
}

void KernelLowerer::prefetch_store() {
  bool fresh = prefetch_slots.empty();
  size_t i = 0;
  for (const TOp *op : prefetch_ops)
    for (int v : op->results) {
      const std::vector<llvm::Value *> &regs = tregs[size_t(v)];
      if (fresh) {
        prefetch_slots.emplace_back(v, std::vector<llvm::AllocaInst *>());
        for (llvm::Value *r : regs)
          prefetch_slots.back().second.push_back(entry_alloca(r->getType(), "prefetch"));
      }
      const std::vector<llvm::AllocaInst *> &slots = prefetch_slots[i++].second;
      for (size_t k = 0; k < regs.size(); ++k)
        b.CreateStore(regs[k], slots[k]);
    }
}

void KernelLowerer::prefetch_reissue() {
  // Coordinates computed here do not dominate the body: recompute them
  // here and forget them after.
  tcoord_cache.clear();
  ring_issue(ring_ops);
  for (const TOp *op : prefetch_ops)
    tile_op(*op);
  if (!prefetch_ops.empty())
    prefetch_store();
  tcoord_cache.clear();
}

void KernelLowerer::prefetch_reload() {
  // The body begins afresh after the waits (lower_tile_body's tile_begin,
  // its coordinates computed there rather than carried across the items),
  // with the prefetched registers read back.
  tile_preloaded.clear();
  for (const auto &[v, slots] : prefetch_slots) {
    std::vector<llvm::Value *> regs;
    for (llvm::AllocaInst *a : slots)
      regs.push_back(b.CreateLoad(a->getAllocatedType(), a));
    tile_preloaded.emplace_back(v, std::move(regs));
  }
  if (!prefetch_slots.empty() || !ring_ops.empty())
    tf = nullptr;
}

void KernelLowerer::mark_progress() {
  // The CTA's finished-task count lives in shared memory (kSmemProgress);
  // the task loop copies it to the CTA's word of the control block args[ABORT]
  // points to (etl_abi.h, ETL_CONTROL_PROGRESS) when it polls
  // (poll_control) and when the CTA ends, so the host sees it move while the
  // kernel runs without a host-memory store per task.
  if_then(b.CreateICmpEQ(tid, b.getInt32(0)), [&] {
    llvm::Value *cnt = b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemProgress));
    b.CreateStore(b.CreateAdd(b.CreateLoad(i32, cnt), b.getInt32(1)), cnt);
  });
}

llvm::Value *KernelLowerer::progress_word(llvm::Value *cta) {
  llvm::Value *off = b.CreateAdd(b.getInt64(ETL_CONTROL_PROGRESS),
                                 b.CreateMul(b.CreateZExt(cta, i64), b.getInt64(4)));
  return b.CreateGEP(b.getInt8Ty(), arg_slot_ptr(ETL_SLOT_ABORT), off);
}

void KernelLowerer::timeline_mark(bool start) {
  // Layout: etl_timeline_record in etl_abi.h (24 bytes: start, end, sm, cta).
  llvm::Value *tl = arg_slot_ptr(ETL_SLOT_TIMELINE);
  llvm::Value *on = b.CreateAnd(b.CreateICmpEQ(tid, b.getInt32(0)), b.CreateIsNotNull(tl));
  if_then(on, [&] {
    llvm::Value *pos = b.CreateLoad(i32, b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemPos)));
    llvm::Value *rec =
        b.CreateGEP(b.getInt8Ty(), tl, b.CreateMul(b.CreateZExt(pos, i64), b.getInt64(24)));
    auto field = [&](unsigned off) { return b.CreateGEP(b.getInt8Ty(), rec, b.getInt64(off)); };
    b.CreateStore(m.clock_ns(b), field(start ? 0 : 8));
    if (start) {
      b.CreateStore(m.sm_id(b), field(16));
      b.CreateStore(m.cta_id(b), field(20));
    }
  });
}

void KernelLowerer::for_each_event_element(const EventUse &use,
                                     const std::function<void(llvm::Value *)> &f, bool notify) {
  const KernelDecl &k = *plan.kernel;
  if (use.event < 0 || size_t(use.event) >= k.events.size())
    throw LowerError("edge names an unknown event");
  const EventDecl &ev = k.events[size_t(use.event)];
  if (ev.shape.size() != use.idx.size())
    throw LowerError("event '" + ev.name + "' indexed with the wrong rank");
  std::vector<llvm::Value *> shape;
  for (const ExprPtr &s : ev.shape)
    shape.push_back(index(*s));
  llvm::Value *base = arg_slot_i64(event_slot(use.event));
  // Recursive nest over the components; `*` loops over the whole dim.
  std::function<void(size_t, llvm::Value *)> rec = [&](size_t d, llvm::Value *acc) {
    if (d == shape.size()) {
      f(b.CreateAdd(base, acc));
      return;
    }
    llvm::Value *scaled = b.CreateMul(acc, shape[d]);
    if (use.idx[d] && use.idx[d]->reads_data) {
      // Read from tensor data: checked here (the prover could not).
      llvm::Value *v = index(*use.idx[d]);
      llvm::Value *ok =
          b.CreateAnd(b.CreateICmpSGE(v, b.getInt64(0)), b.CreateICmpSLT(v, shape[d]));
      if_then(b.CreateNot(ok), [&] { emit_index_error(use.event, d, v, shape[d], notify); });
      if_then(ok, [&] { rec(d + 1, b.CreateAdd(scaled, v)); });
    } else if (use.idx[d]) {
      rec(d + 1, b.CreateAdd(scaled, index(*use.idx[d])));
    } else {
      for_range(b.getInt64(0), shape[d], b.getInt64(1),
                [&](llvm::Value *iv) { rec(d + 1, b.CreateAdd(scaled, iv)); });
    }
  };
  rec(0, b.getInt64(0));
}

void KernelLowerer::notify_element(int event, llvm::Value *off) {
  llvm::Value *p = b.CreateGEP(i32, arg_slot_ptr(ETL_SLOT_EVENTS), off);
  if (has_dynamic_consumer(event)) {
    // The last notification fires the element (lower_dynamic.cpp).
    llvm::Value *old = m.atomic_add_acq_rel(b, p, b.getInt32(0xFFFFFFFFu));
    llvm::Value *rel = b.CreateSub(off, arg_slot_i64(event_slot(event)));
    if_then(b.CreateICmpEQ(old, b.getInt32(1)), [&] { emit_fire(event, rel); });
    return;
  }
  m.atomic_add_release(b, p, b.getInt32(0xFFFFFFFFu));
}

/// Data-dependent notifies (`notifies E[idx[i]]`): the runtime gives every
/// element of E one token per task of the group (plan.c). Once a task knows
/// its target element, here after its waits and before its body, thread 0
/// hands the token back on every other element; its notify at the end
/// consumes the target's. So an element completes when every task aiming at
/// it has finished and every other task has started. O(|E|) atomics per task.
void KernelLowerer::emit_data_notify_release(const GroupPlan &gp) {
  for (const EventUse &use : gp.notifies) {
    if (std::none_of(use.idx.begin(), use.idx.end(),
                     [](const Expr *x) { return x && x->reads_data; }))
      continue;
    if_then(b.CreateICmpEQ(tid, b.getInt32(0)), [&] {
      push_batch_open();
      for_each_event_element(
          use,
          [&](llvm::Value *target) {
            llvm::Value *numel = b.getInt64(1);
            for (const ExprPtr &d : plan.kernel->events[size_t(use.event)].shape)
              numel = b.CreateMul(numel, index(*d));
            llvm::Value *base = arg_slot_i64(event_slot(use.event));
            for_range(b.getInt64(0), numel, b.getInt64(1), [&](llvm::Value *x) {
              llvm::Value *off = b.CreateAdd(base, x);
              if_then(b.CreateICmpNE(off, target), [&] { notify_element(use.event, off); });
            });
          },
          /*notify=*/true);
      push_batch_close();
    });
  }
}

void KernelLowerer::emit_event_ops(const GroupPlan &gp, bool wait) {
  llvm::Value *is0 = b.CreateICmpEQ(tid, b.getInt32(0));
  if_then(is0, [&] {
    llvm::Value *events = arg_slot_ptr(ETL_SLOT_EVENTS);
    if (!wait) {
      m.fence(b);
      push_batch_open(); // the items the notifies make ready: one claim of tail
    }
    for (const EventUse &use : wait ? gp.waits : gp.notifies) {
      for_each_event_element(
          use,
          [&](llvm::Value *off) {
            llvm::Value *p = b.CreateGEP(i32, events, off);
            if (!wait) {
              notify_element(use.event, off);
              return;
            }
            // while (load_acquire(p) != 0) { if (abort) { flag; break; } pause; }
            auto *head = llvm::BasicBlock::Create(ctx, "wait.head", fn);
            auto *body = llvm::BasicBlock::Create(ctx, "wait.spin", fn);
            auto *abort_bb = llvm::BasicBlock::Create(ctx, "wait.abort", fn);
            auto *pause = llvm::BasicBlock::Create(ctx, "wait.pause", fn);
            auto *done = llvm::BasicBlock::Create(ctx, "wait.done", fn);
            llvm::AllocaInst *last = spin_clock();
            b.CreateBr(head);
            b.SetInsertPoint(head);
            llvm::Value *v = m.load_acquire(b, p);
            b.CreateCondBr(b.CreateICmpEQ(v, b.getInt32(0)), done, body);
            b.SetInsertPoint(body);
            llvm::Value *ab = spin_abort_flag(last);
            b.CreateCondBr(b.CreateICmpNE(ab, b.getInt32(0)), abort_bb, pause);
            b.SetInsertPoint(abort_bb);
            b.CreateStore(b.getInt32(1), b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(kSmemAbort)));
            b.CreateBr(done);
            b.SetInsertPoint(pause);
            m.spin_pause(b);
            b.CreateBr(head);
            b.SetInsertPoint(done);
          },
          /*notify=*/!wait);
    }
    if (!wait)
      push_batch_close();
  });
}

} // namespace etl
