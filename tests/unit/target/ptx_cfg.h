//===- tests/unit/target/ptx_cfg.h - Just enough PTX to check orderings --===//
//
// What this owns: a small reader for the PTX etlc emits (one `.entry` and
// the `.func`s of task bodies LLVM did not inline, LLVM
// NVPTX's layout: one instruction per `;`, labels `$L__BB0_n:`, `@%p bra`),
// giving the kernel's instructions, basic blocks and control-flow edges, the
// register definitions, which argument-block slot an address is computed
// from (args[k] is `ld.global.u64 [%args+8k]` of the kernel's parameter),
// natural loops, and path queries over the CFG ("does every path from here
// to there pass an instruction like this?"). Tests read orderings with it,
// not just the presence of an instruction.
//
//===----------------------------------------------------------------------===//
#ifndef ETL_TESTS_PTX_CFG_H
#define ETL_TESTS_PTX_CFG_H

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace etl::ptxcheck {

/// One instruction: `@%p1 bra $L__BB0_2;` is guard "%p1", negated false,
/// op "bra", operands {"$L__BB0_2"}.
struct Insn {
  std::string guard; ///< predicate register, "" when unguarded
  bool negated = false;
  std::string op;                    ///< "ld.acquire.gpu.global.u32", "bar.sync", ...
  std::vector<std::string> operands; ///< as written, braces and brackets kept
  int block = -1;
  int line = 0; ///< in the PTX text, for messages
  std::string text;
};

struct Block {
  std::string label;      ///< "" for the entry block
  std::vector<int> insns; ///< indices into Kernel::insns
  std::vector<int> succs; ///< block indices
  std::vector<int> preds;
};

/// One function of a PTX module: the `.entry`, or a `.func` (a task body
/// LLVM did not inline).
struct Kernel {
  std::string name;
  bool entry = true; ///< the `.entry`, not a `.func`
  std::vector<Insn> insns;
  std::vector<Block> blocks;
  std::map<std::string, std::vector<int>> defs; ///< register -> defining insns

  /// Registers an instruction reads (address registers included).
  std::vector<std::string> uses(const Insn &i) const;
  /// The register an instruction writes, or "" (stores, branches, barriers).
  static std::vector<std::string> dests(const Insn &i);
  /// The base register of a memory operand `[%rd5+16]` (and the offset).
  static std::string address_reg(const std::string &operand, long *offset = nullptr);
  /// The argument-block slots a register's value is computed from: every
  /// `ld.*.u64 [%args+8k]` reached through its definitions.
  std::set<long> slots_of(const std::string &reg) const;
  /// Is `reg` the thread's index: `%tid.x` (moved or converted), or in a
  /// task function its thread-id parameter?
  bool is_tid(const std::string &reg) const;
  /// Is `reg` the argument block pointer itself (the parameter, converted)?
  bool is_args_pointer(const std::string &reg) const;
  /// Natural loops: for every back edge t -> h (h dominates t), the blocks of the loop.
  std::vector<std::set<int>> loops() const;
  /// Does every backward path from just before instruction `at` reach an
  /// instruction with ok(insn) before one with fail(insn) or the kernel's
  /// entry? `why` names the failing path's end.
  bool every_path_back(int at, const std::function<bool(const Insn &)> &ok,
                       const std::function<bool(const Insn &)> &fail, std::string &why) const;
  /// The same, forward from just after `at`; reaching `ret` counts as fail.
  bool every_path_forward(int at, const std::function<bool(const Insn &)> &ok,
                          const std::function<bool(const Insn &)> &fail, std::string &why) const;
};

/// Every function of `ptx` with a body, in order; throws
/// std::runtime_error on text it cannot read.
std::vector<Kernel> parse_functions(const std::string &ptx);
/// The first `.entry` of `ptx`.
Kernel parse_kernel(const std::string &ptx);

} // namespace etl::ptxcheck

#endif
