//===- lower/kernel_lowerer.h - The megakernel's skeleton (internal) -----===//
//
// What this owns: KernelLowerer, which walks one kernel and emits its LLVM
// IR against a Machine: etl_main's persistent task loop, the waits and
// notifies of the event protocol, the abort and progress polling, the
// timeline (lower_kernel.cpp), the dynamic device queue and its dealer
// (lower_dynamic.cpp), and per group the function that decodes the task
// index, issues the weight prefetch (prefetch.cpp), waits, runs the body
// (BodyLowerer::lower_tile_body, lower/body_lowerer.h) and notifies. The
// shared-memory header [0, kSmemScratch) is the skeleton's: it broadcasts
// the queue entry, the abort flag, the dynamic-loop decision and the
// progress count (offsets in lower/plan.h). Not included outside
// compiler/lower.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "lower/body_lowerer.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace etl {

class KernelLowerer : public BodyLowerer {
public:
  using BodyLowerer::BodyLowerer;
  /// The skeleton builds no thread coordinates: LowerCtx's regions.
  using LowerCtx::for_range;
  using LowerCtx::if_then;
  /// Emits etl_main and one internal function per group.
  llvm::Function *lower_kernel();
  unsigned smem_bytes() const;

  // ---- lower_kernel.cpp -----------------------------------------------------
private:
  /// Group g's function, from its tile IR.
  llvm::Function *lower_group(int g);
  void emit_event_ops(const GroupPlan &gp, bool wait);
  /// Group `g` waits: emits the load ops of `tile` prefetch.cpp lets run
  /// before the waits and records them so the body skips them.
  void emit_prefetch(const GroupPlan &gp, const TileFunc &tile);
  /// In a kernel with dynamic groups the wait loop may run dynamic items
  /// (emit_static_wait_loop): the prefetched registers wait in allocas
  /// (prefetch_slots), are issued again after each item the wait runs
  /// (prefetch_reissue), so none lives across an item, and are read back
  /// once the waits are done (prefetch_reload, into tile_preloaded).
  void prefetch_store();
  /// Lowers ring_prefetch's ops (before the waits, or again after an item).
  void ring_issue(const std::vector<const TOp *> &ops);
  void prefetch_reissue();
  void prefetch_reload();
  std::vector<const TOp *> prefetch_ops; ///< of the group being lowered, with prefetch_slots
  /// The group's ring prologue ops issued before its waits (ring_prefetch);
  /// in a kernel with dynamic groups a dynamic item run by the wait first
  /// waits for their copies (its shared memory overlaps the rings), and
  /// prefetch_reissue issues them again after it.
  std::vector<const TOp *> ring_ops;
  std::vector<std::pair<int, std::vector<llvm::AllocaInst *>>> prefetch_slots;

public:
  /// Per group, how many loads were issued before its waits
  /// (backend.h's BackendResult::prefetched).
  std::vector<std::pair<std::string, size_t>> prefetched;
  /// Per group, how many of its rings' first stages were issued before its
  /// waits (backend.h's BackendResult::ring_prefetched).
  std::vector<std::pair<std::string, size_t>> ring_prefetched;
  /// Per group, how many loads its loops issue one iteration ahead.
  std::vector<std::pair<std::string, size_t>> pipelined;

private:
  /// One notification of element `off` (absolute counter index) of `event`,
  /// firing it for dynamic consumers when it reaches zero.
  void notify_element(int event, llvm::Value *off);
  void emit_data_notify_release(const GroupPlan &gp);
  /// Thread 0: counts a finished task in shared memory (kSmemProgress).
  void mark_progress();
  /// Thread 0, in etl_main: every kPollEveryTasks-th call or after
  /// kPollEveryNs, reads the abort flag and publishes the progress count;
  /// returns the flag read (i32), 0 when it was not due.
  llvm::Value *poll_control();
  /// Thread 0, before a spin-wait: the clock (an i64 alloca) that
  /// spin_abort_flag measures from.
  llvm::AllocaInst *spin_clock();
  /// Thread 0, in a spin-wait's back-off: the abort flag (i32), read from
  /// the host-mapped control block only once kPollEveryNs has passed since
  /// `*last` (which it then resets), else 0: a PCIe read per spin would
  /// queue every waiting CTA behind the others' reads.
  llvm::Value *spin_abort_flag(llvm::AllocaInst *last);
  /// Thread 0: copies the shared progress count to CTA `cta`'s control word.
  void publish_progress(llvm::Value *cta);
  /// etl_main's poll state (thread 0): calls since the last poll, its clock.
  llvm::AllocaInst *poll_since = nullptr, *poll_last = nullptr;
  /// CTA `cta`'s progress word in the control block (etl_abi.h).
  llvm::Value *progress_word(llvm::Value *cta);
  /// Thread 0, when args[ETL_SLOT_TIMELINE] is set: writes the clock into
  /// the task's timeline record (start also writes sm and cta).
  void timeline_mark(bool start);
  /// Offset (i64) of each element of `use` in the counter array; calls `f`
  /// for each one (loops over `*` components).
  /// `notify`: the elements are notified (names the clause in the error
  /// record of a data-dependent index out of range).
  void for_each_event_element(const EventUse &use, const std::function<void(llvm::Value *)> &f,
                              bool notify);

  // ---- lower_dynamic.cpp ----------------------------------------------------
  bool any_dynamic() const;
  /// Does some dynamic group wait on event `e`?
  bool has_dynamic_consumer(int e) const;
  /// Pointer to word `w` of the dynamic-scheduling array (args[ETL_SLOT_DYN]).
  llvm::Value *dyn_word(llvm::Value *w);
  llvm::Value *dyn_word(unsigned w) { return dyn_word(b.getInt64(w)); }
  /// Declares etl.dyn.run(args, tid, smem): runs the dynamic item whose id
  /// thread 0 left in shared memory (kSmemDynItem), then counts it finished.
  void declare_dyn_run();
  void define_dyn_run(const std::vector<llvm::Function *> &group_fns);
  /// Thread 0 only: takes a queue ticket (one fetch-and-add of head) unless
  /// it holds one (smem kSmemDynTicket), then looks at the ticket's slot.
  /// `wait`: take a ticket even if the queue looks empty and spin until the
  /// slot is filled, no item remains or abort; else (a static task's wait)
  /// take one only when head < tail and look once. i1: an item was taken
  /// (its id in smem kSmemDynItem, its timeline index in kSmemPos); on abort
  /// while waiting smem kSmemAbort is set.
  llvm::Value *emit_try_pop(bool wait);
  /// Thread 0 only: emit_try_pop, then the CTA's decision (run, stop,
  /// pause) in smem kSmemDynDecision.
  void emit_pop_decision(bool wait);
  /// Thread 0 only: takes a queue ticket (one fetch-and-add of head) into
  /// kSmemDynTicket.
  void emit_take_ticket();
  /// CTA-wide, after a dynamic item's body, before its epilogue and
  /// notifies: in the dynamic loop, thread 0 takes the CTA's next ticket
  /// now (unless it holds one), so the fetch overlaps the item's tail and
  /// the loop's next round goes straight to the ticket's slot.
  void emit_early_ticket();
  /// Thread 0 only: claims `n` (i32) slots with one add on tail. Returns the
  /// first slot (i32); `*fits` (i1) is whether all fit (else the error word
  /// and the abort flag are raised).
  llvm::Value *emit_push_claim(llvm::Value *n, llvm::Value **fits);
  /// Thread 0 only: release-stores item `id` (i32) into claimed slot `s`.
  void emit_push_store(llvm::Value *s, llvm::Value *id);
  /// Thread 0 only: pushes item `id` (i32); inside a batch (push_batch_open)
  /// the id waits in the batch's registers and is pushed by its flush.
  void emit_push(llvm::Value *id);
  /// Thread 0 only: the items a task's notifies (or an expander's settle)
  /// make ready are pushed together: up to kPushBatch ids wait in registers
  /// (a select per entry, not an array indexed by the count, which would go
  /// to local memory) and push_batch_flush claims tail once for all of them
  /// (emit_push_claim(n)) and release-stores the n slots, when the batch is
  /// full and at push_batch_close. The slot stores stay releases after the
  /// dependency counters' acq_rel decrements: the same happens-before chain.
  void push_batch_open();
  void push_batch_flush();
  void push_batch_close();
  static constexpr unsigned kPushBatch = 8;
  struct PushBatch {
    llvm::AllocaInst *n = nullptr; ///< ids waiting (i32)
    std::vector<llvm::AllocaInst *> ids;
  };
  PushBatch push_batch; ///< open while push_batch.n is set
  /// Thread 0 only, after element `rel` (i64, offset inside event `ev`)
  /// reached zero: decrements the dependency counter of every dynamic task
  /// waiting on it and pushes those that become ready.
  void emit_fire(int ev, llvm::Value *rel);
  /// Thread 0 only: every element `gp` waits on is zero (i1), no spinning.
  llvm::Value *all_waits_ready(const GroupPlan &gp);
  /// CTA-wide loop of the main kernel once its static queue is empty: run
  /// dynamic items until none remain (or abort), then branch to `exit`.
  void emit_dyn_loop(llvm::BasicBlock *exit);
  /// CTA-wide wait of a static task when the program has dynamic groups:
  /// while its waits are not done, run ready dynamic items. Branches to
  /// `out` on abort; continues at the insertion point when ready.
  void emit_static_wait_loop(const GroupPlan &gp, int g, llvm::Value *lin, llvm::BasicBlock *out);
  llvm::Function *dyn_run = nullptr;
  /// etl.expand.<group>(args, prefix, tid, smem) for a group whose range
  /// reads data: thread 0 evaluates the range of prefix task `prefix`, adds
  /// its tasks to `remaining`, settles the elements they notify (one token
  /// per expander each: + n - 1, firing what reaches zero) and pushes them.
  llvm::Function *lower_expander(int g);
  /// Thread 0: an event index that reads data is outside [0, extent): fill
  /// the error record (args[ETL_SLOT_ERROR], first writer wins), raise the
  /// abort flag and this CTA's shared abort word.
  void emit_index_error(int event, size_t dim, llvm::Value *value, llvm::Value *extent,
                        bool notify);
  int cur_group = -1;             ///< the group being lowered (error record)
  llvm::Value *cur_lin = nullptr; ///< its task's linear index (i32)

};

} // namespace etl
