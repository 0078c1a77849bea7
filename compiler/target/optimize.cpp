//===- target/optimize.cpp - Verification and the optimisation pipeline --===//
//
// What this owns: module verification before any code generation (an LLVM
// fatal error would kill etlc) and the standard new-pass-manager pipeline
// (PassBuilder O1/O2/O3) with the target's own callbacks (NVVMReflect etc.);
// and the one-time registration of the LLVM targets the back end uses.
//
//===----------------------------------------------------------------------===//
#include "target/optimize.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
void LLVMInitializeX86TargetInfo();
void LLVMInitializeX86Target();
void LLVMInitializeX86TargetMC();
void LLVMInitializeX86AsmPrinter();
void LLVMInitializeX86AsmParser(); // sim's inline asm (Machine::opaque_zero)
}

namespace etl {

void init_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser();
  });
}

static bool verify(llvm::Module &m, const char *when, std::string &error) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (!llvm::verifyModule(m, &os))
    return true;
  os.flush();
  error = std::string("internal error: invalid LLVM IR ") + when + ": " + msg;
  return false;
}

bool optimize_module(llvm::Module &m, llvm::TargetMachine &tm, int opt_level, std::string &error) {
  if (!verify(m, "after lowering", error))
    return false;
  if (opt_level <= 0)
    return true;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
  return verify(m, "after optimisation", error);
}

} // namespace etl
