//===- lower/lower_ctx.h - What the kernel skeleton and the bodies share --===//
//
// What this owns: LowerCtx, the context every lowering file emits through:
// the kernel plan, the Machine, the LLVM module and its builder, the common
// types, the function being emitted (its args, thread index and shared
// memory, the task and its domain variables), the argument-block slots and
// index expressions (lower_index.cpp), the element types' register and
// memory forms (lower_convert.cpp), and the control-flow helpers
// (lower_ctx.cpp). The kernel skeleton (lower/kernel_lowerer.h) and the
// per-body lowering (lower/body_lowerer.h) build on it; the free helpers of
// the op-family files take it (through BodyLowerer) by reference, so its
// members are public. Not included outside compiler/lower.
//
// Element types in registers: f32 and f16 are f32 (f16 results are rounded
// to half precision after each op), i32 is i32, i8/i16/u8/u16/u32 are an i32
// holding the value sign- or zero-extended (wrap_int after each op; u32 uses
// the unsigned forms of `/ % >>` and comparisons), and bool is an i32 holding 0
// or 1 (comparisons zero-extend their i1).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "lower/plan.h"
#include "target/machine.h"
#include "taskgraph/taskgraph.h"

#include <functional>
#include <map>
#include <vector>

namespace etl {

class LowerCtx {
public:
  LowerCtx(const KernelPlan &plan, Machine &m, llvm::Module &mod, unsigned threads);

  // ---- lower_index.cpp ------------------------------------------------------
  /// An index-typed expression as i64.
  llvm::Value *index(const Expr &e);
  /// `t[i, j]` of an i32 tensor in an index expression (reads_data), as i64.
  llvm::Value *element_read(const Expr &e);
  llvm::Value *floordiv(llvm::Value *a, llvm::Value *b);
  llvm::Value *floormod(llvm::Value *a, llvm::Value *b);
  llvm::Value *cdiv(llvm::Value *a, llvm::Value *b);
  llvm::Value *arg_slot_i64(unsigned slot);
  llvm::Value *arg_slot_ptr(unsigned slot);
  llvm::Value *arg_load(llvm::Type *ty, unsigned slot);
  unsigned dim_slot(int i) const;
  unsigned tensor_slot(int i) const;
  unsigned event_slot(int i) const;
  unsigned scalar_slot(int i) const;
  /// A scalar parameter's value, read from its argument slot (the value's
  /// bits in the slot's low bytes) into its register type.
  TileVal scalar_param(const Expr &e);
  TileVal scalar_param(int index); ///< kernel scalar `index`

  // ---- lower_convert.cpp ----------------------------------------------------
  /// An integer register wrapped to the width of `t` (i8/u8/i16/u16), the
  /// canonical form every op leaves; other types unchanged.
  llvm::Value *wrap_int(llvm::Value *v, ElemType t);
  llvm::Value *convert_scalar(llvm::Value *v, const TileVal &from, ElemType to);
  /// The type an element of `t` has in memory (bf16: i16; FP8, i4/u4: i8).
  llvm::Type *memory_type(ElemType t);
  /// A loaded element (of memory_type) in its register form; `lin`: its
  /// linear index in the tensor (a packed type's nibble is its low bit).
  llvm::Value *from_memory(llvm::Value *v, ElemType t, llvm::Value *lin);
  /// A register in its memory form (not for packed types).
  llvm::Value *to_memory(llvm::Value *x, ElemType t);

  // ---- helpers (lower_ctx.cpp) ----------------------------------------------
  llvm::Type *reg_type(ElemType t) const;
  /// The signed integer predicate `p` made unsigned for an unsigned `t`.
  static llvm::CmpInst::Predicate int_predicate(llvm::CmpInst::Predicate p, ElemType t);
  llvm::AllocaInst *entry_alloca(llvm::Type *ty, const char *name = "");
  void if_then(llvm::Value *cond, const std::function<void()> &then);
  /// The registers `then` makes where `when` (i1) holds, else `otherwise`
  /// (each of type `ty`), joined by phis after a branch (blocks NAME and
  /// NAME.done; the insertion point continues after them).
  std::vector<llvm::Value *> guarded_regs(llvm::Value *when, llvm::Type *ty,
                                          llvm::Value *otherwise, const char *name,
                                          const std::function<std::vector<llvm::Value *>()> &then);
  /// for (iv = lo; iv < hi; iv += step) body(iv); all i64, step > 0.
  void for_range(llvm::Value *lo, llvm::Value *hi, llvm::Value *step,
                 const std::function<void(llvm::Value *)> &body);

  const KernelPlan &plan;
  Machine &m;
  llvm::Module &mod;
  llvm::LLVMContext &ctx;
  Builder b;
  unsigned T;
  /// While set, argument-block loads are `!invariant.load` (LLVM hoists
  /// them out of the loop around): set while a ring's copies are lowered
  /// (lower_index.cpp's arg_slot_i64).
  bool invariant_args = false;
  /// Argument-block values a pipelined loop's copies read (tensor pointers,
  /// extents, the loop's bound), loaded once before the loop (tile_for:
  /// while ring_args_fill) and reused while a ring copy is lowered
  /// (invariant_args): the copies sit in a branch LLVM does not hoist
  /// loads out of.
  std::map<std::pair<unsigned, llvm::Type *>, llvm::Value *> ring_args;
  bool ring_args_fill = false;
  /// While set, argument-block loads stay plain loads in place whatever
  /// invariant_args says: a ring's first stages issued before a task's
  /// waits (KernelLowerer::emit_prefetch), whose values must not be merged
  /// with the loop's and live across the wait.
  bool args_in_place = false;
  llvm::Type *i1, *i32, *i64, *f32, *ptr;

  // The function being emitted: etl_main, a group's function or a dynamic
  // helper (etl.dyn.run, etl.expand.<group>).
  llvm::Function *fn = nullptr;
  llvm::Value *args = nullptr, *tid = nullptr, *smem = nullptr;
  const TaskDecl *task = nullptr;
  std::vector<llvm::Value *> task_vars;
};

} // namespace etl
