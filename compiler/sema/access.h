//===- sema/access.h - What a task body reads and writes ------------------===//
//
// What this owns: the list of global memory accesses of a checked task body
// (loads, stores and element reads), each with the tensor, the box of
// elements it may touch (per dimension [start, start + extent) as symbolic
// expressions, or unknown for gathers and data-dependent indices) and the
// `for` loops around it. Two analyses read it: the memory order inside one
// task (sema/hazards.h) and the races between task groups
// (schedule/races.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "shape/symbolic.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace etl {

/// One dimension of the elements an access touches: [start, start + extent).
struct AccessBox {
  bool known = false; ///< false: a gather or a data-dependent index (any element)
  Sym start, extent;
};

/// An enclosing `for`: var ranges over [lo, hi) (bounds unknown: nullopt),
/// `trips` times (cdiv(hi - lo, step)).
struct AccessLoop {
  std::string var;
  std::optional<Sym> lo, hi, trips;
  std::optional<Sym> step; ///< 1 when the loop has no `step`
};

/// A load, store, atomic or element read of a task body.
struct Access {
  const Expr *node = nullptr; ///< the load/store call or the element read
  int tensor = -1;            ///< index into KernelDecl::tensors
  bool write = false;
  /// An atomic read-modify-write (atomic_add, ...; also `write`): atomics of
  /// concurrent tasks on the same elements are no race (schedule/races.h).
  bool atomic = false;
  /// Rank 0: a load or element read is done by every thread, a store by
  /// thread 0 alone.
  bool rank0 = false;
  /// Inside an `if` branch: it may not run at all.
  bool conditional = false;
  std::vector<int64_t> shape;    ///< the tile the access moves
  std::vector<AccessBox> box;    ///< per tensor dimension
  std::vector<AccessLoop> loops; ///< enclosing `for`s, outermost first
};

/// The access has a `mask =` argument (it may touch fewer elements than its
/// box).
bool has_mask(const Access &a);

/// The loop `s` (a `for` statement) as its accesses see it: var, bounds and
/// trip count, each absent when it reads tensor data or did not check.
AccessLoop access_loop(const Stmt &s);

/// Calls `f` for every sub-expression of `e` that is an access, in the order
/// the lowering evaluates them (a slice's gather indices, then keyword
/// arguments, then the stored value, then the access itself).
void for_each_access_node(const Expr &e, const std::function<void(const Expr &)> &f);

/// Every access of `body` in program order (a loop's body once), with the
/// accesses of each `for` statement's body (nested loops included) in
/// `loop_bodies` when it is not null (indices into the result).
std::vector<Access>
collect_accesses(const std::vector<StmtPtr> &body,
                 std::vector<std::pair<const Stmt *, std::vector<size_t>>> *loop_bodies = nullptr);

} // namespace etl
