//===- tests/unit/e2e/forwarding_machine.h - A Machine that forwards every op -===//
//
// For tests that decorate the target's machine (BackendOptions::
// wrap_machine): ForwardingMachine hands every operation to the machine it
// wraps; a test derives from it and overrides only the operations it
// changes (async_wait_test.cpp drops cp.async waits, lower_error_test.cpp
// refuses non-coherent loads).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "target/machine.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace etl::testing {

class ForwardingMachine : public etl::Machine {
public:
  explicit ForwardingMachine(std::unique_ptr<etl::Machine> in) : in_(std::move(in)) {}

  using Builder = etl::Builder;
  using Machine::math;

  const std::string &target() const override { return in_->target(); }
  llvm::TargetMachine &target_machine() override { return in_->target_machine(); }
  void init_module(llvm::Module &m) override { in_->init_module(m); }
  llvm::Function *create_kernel(llvm::Module &m) override { return in_->create_kernel(m); }
  void finish_kernel(llvm::Module &m, llvm::Function *k, unsigned t, unsigned s) override {
    in_->finish_kernel(m, k, t, s);
  }
  llvm::Value *thread_id(Builder &b) override { return in_->thread_id(b); }
  llvm::Value *cta_id(Builder &b) override { return in_->cta_id(b); }
  void barrier(Builder &b) override { in_->barrier(b); }
  void shared_access(Builder &b, llvm::Value *p, unsigned n, bool store) override {
    in_->shared_access(b, p, n, store);
  }
  llvm::Value *shuffle(Builder &b, etl::ShflMode mode, llvm::Value *v, llvm::Value *lane,
                       unsigned c, unsigned mask, unsigned line) override {
    return in_->shuffle(b, mode, v, lane, c, mask, line);
  }
  std::vector<llvm::Value *> mma_m16n8k16(Builder &b, bool bf16,
                                          const std::vector<llvm::Value *> &a,
                                          const std::vector<llvm::Value *> &bf,
                                          const std::vector<llvm::Value *> &c,
                                          unsigned line) override {
    return in_->mma_m16n8k16(b, bf16, a, bf, c, line);
  }
  llvm::Value *to_tf32(Builder &b, llvm::Value *v) override { return in_->to_tf32(b, v); }
  std::vector<llvm::Value *> mma_m16n8k8_tf32(Builder &b, const std::vector<llvm::Value *> &a,
                                              const std::vector<llvm::Value *> &bf,
                                              const std::vector<llvm::Value *> &c,
                                              unsigned line) override {
    return in_->mma_m16n8k8_tf32(b, a, bf, c, line);
  }
  std::vector<llvm::Value *> ldmatrix(Builder &b, llvm::Value *p, unsigned n, bool trans,
                                      unsigned line) override {
    return in_->ldmatrix(b, p, n, trans, line);
  }
  void async_copy(Builder &b, llvm::Value *dst, llvm::Value *src, unsigned n) override {
    in_->async_copy(b, dst, src, n);
  }
  void async_commit(Builder &b) override { in_->async_commit(b); }
  void async_wait(Builder &b, unsigned pending) override { in_->async_wait(b, pending); }
  llvm::Value *shared_base(Builder &b) override { return in_->shared_base(b); }
  void mbarrier_init(Builder &b, llvm::Value *bar, unsigned count) override {
    in_->mbarrier_init(b, bar, count);
  }
  void mbarrier_arrive_expect_tx(Builder &b, llvm::Value *bar, llvm::Value *bytes) override {
    in_->mbarrier_arrive_expect_tx(b, bar, bytes);
  }
  void mbarrier_wait(Builder &b, llvm::Value *bar, llvm::Value *parity, unsigned line) override {
    in_->mbarrier_wait(b, bar, parity, line);
  }
  void mbarrier_inval(Builder &b, llvm::Value *bar) override { in_->mbarrier_inval(b, bar); }
  void fence_proxy_async(Builder &b) override { in_->fence_proxy_async(b); }
  bool has_tma() const override { return in_->has_tma(); }
  void tma_load(Builder &b, llvm::Value *dst, llvm::Value *map,
                const std::vector<llvm::Value *> &coords, llvm::Value *bar) override {
    in_->tma_load(b, dst, map, coords, bar);
  }
  llvm::Value *wgmma_smem_addr(Builder &b, llvm::Value *p) override {
    return in_->wgmma_smem_addr(b, p);
  }
  void wgmma_fence(Builder &b) override { in_->wgmma_fence(b); }
  std::vector<llvm::Value *> wgmma_mma(Builder &b, unsigned n, bool bf16, bool trans_b,
                                       llvm::Value *da, llvm::Value *db,
                                       const std::vector<llvm::Value *> &acc,
                                       unsigned line) override {
    return in_->wgmma_mma(b, n, bf16, trans_b, da, db, acc, line);
  }
  void wgmma_commit(Builder &b) override { in_->wgmma_commit(b); }
  std::vector<llvm::Value *> wgmma_wait(Builder &b, unsigned pending,
                                        const std::vector<llvm::Value *> &acc,
                                        unsigned line) override {
    return in_->wgmma_wait(b, pending, acc, line);
  }
  llvm::Value *global_load(Builder &b, llvm::Type *ty, llvm::Value *p) override {
    return in_->global_load(b, ty, p);
  }
  void global_store(Builder &b, llvm::Value *v, llvm::Value *p) override {
    in_->global_store(b, v, p);
  }
  llvm::Value *global_load_nc(Builder &b, llvm::Type *ty, llvm::Value *p) override {
    return in_->global_load_nc(b, ty, p);
  }
  llvm::Value *global_atomic(Builder &b, etl::AtomicOp op, llvm::Value *p, llvm::Value *v,
                             llvm::Value *desired) override {
    return in_->global_atomic(b, op, p, v, desired);
  }
  llvm::Value *atomic_add16(Builder &b, llvm::Value *p, llvm::Value *bits, bool bf16) override {
    return in_->atomic_add16(b, p, bits, bf16);
  }
  llvm::Value *atomic_add_release(Builder &b, llvm::Value *p, llvm::Value *v) override {
    return in_->atomic_add_release(b, p, v);
  }
  llvm::Value *load_acquire(Builder &b, llvm::Value *p) override { return in_->load_acquire(b, p); }
  llvm::Value *atomic_add_acq_rel(Builder &b, llvm::Value *p, llvm::Value *v) override {
    return in_->atomic_add_acq_rel(b, p, v);
  }
  llvm::Value *atomic_cas(Builder &b, llvm::Value *p, llvm::Value *e, llvm::Value *d) override {
    return in_->atomic_cas(b, p, e, d);
  }
  void fence(Builder &b) override { in_->fence(b); }
  void spin_pause(Builder &b) override { in_->spin_pause(b); }
  void task_begin(Builder &b, llvm::Value *g, llvm::Value *lin) override {
    in_->task_begin(b, g, lin);
  }
  void task_end(Builder &b) override { in_->task_end(b); }
  llvm::Value *clock_ns(Builder &b) override { return in_->clock_ns(b); }
  llvm::Value *sm_id(Builder &b) override { return in_->sm_id(b); }
  llvm::Value *math(Builder &b, etl::MathFn fn, llvm::Value *x, llvm::Value *y) override {
    return in_->math(b, fn, x, y);
  }
  bool emit(llvm::Module &m, std::string &code, std::string &error) override {
    return in_->emit(m, code, error);
  }


protected:
  std::unique_ptr<etl::Machine> in_;
};

} // namespace etl::testing
