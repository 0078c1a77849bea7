//===- sema/check.cpp - Names, types and symbolic shapes ------------------===//
//
// What this owns: the checks described in sema/check.h. The checker walks
// each kernel once, top to bottom:
//
//   consts  -> folded to int64 (they size tiles, so they must be constant)
//   dims    -> symbols, each >= 1
//   where   -> facts for the prover (divisibility, bounds); every clause is
//              also checked by the runtime at bind time
//   tensors, events -> symbolic shapes (exact: no remainder-dropping `/`)
//   tasks   -> domains, event indices proven in range, then the body:
//              tiles have static shapes, element-wise operands broadcast,
//              stores match their slices.
//
// Every expression gets a Type; index expressions also get their Sym. An
// error types the expression Unknown, and Unknown operands produce no further
// errors, so one mistake is reported once and the next task is still checked.
//
//===----------------------------------------------------------------------===//
#include "sema/check.h"
#include "sema/checker.h"

namespace etl {

bool check_program(Program &p, Diag &diag, const TargetInfo &target) {
  unsigned before = diag.error_count();
  sema::Checker(p, diag, target.smem_budget).run();
  return diag.error_count() == before;
}

} // namespace etl
