//===- target/optimize.h - Verification and the optimisation pipeline ----===//
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <string>

namespace etl {

/// Verifies `m` (an invalid module never reaches a backend), runs the standard
/// per-module pipeline at `opt_level` (0 = none) with `tm`'s target analyses,
/// and verifies again. False with `error` set on failure.
bool optimize_module(llvm::Module &m, llvm::TargetMachine &tm, int opt_level, std::string &error);

/// Registers the NVPTX and X86 targets with LLVM (idempotent, thread-safe).
void init_llvm_targets();

} // namespace etl
