//===- sema/checker.h - The checker shared by sema/check_*.cpp ------------===//
//
// What this owns: the Checker class that sema/check.h's check_program runs,
// declared once and implemented by concern:
//   check_decls.cpp     scopes, consts, kernels, dims, `where`, shapes
//   check_tasks.cpp     task domains, waits/notifies, data-dependent ranges
//   check_stmts.cpp     statements of a task body
//   check_exprs.cpp     index expressions, names, operators, promotion
//   check_slices.cpp    tensor slices and masks
//   check_builtins.cpp  calls of the builtin functions
//   check_types.cpp     type constructors, descriptions, broadcasting
// Private to sema: no other stage includes it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "diag/diag.h"
#include "shape/symbolic.h"
#include "target/target.h"

#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace etl::sema {

/// "[16, 128]"
std::string shape_str(const std::vector<int64_t> &s);
/// "[M, cdiv(N, 128)]"
std::string shape_str(const std::vector<Sym> &s);
/// How a type reads in a message: "a tile<f32>[16, 128]", "an index".
std::string describe(const Type &t);
/// The type of an integer index expression (its value is the Expr's sym).
Type index_type();
Type scalar_type(ElemType e);
Type tile_type(ElemType e, std::vector<int64_t> shape);
/// Numpy broadcasting of two static shapes; nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t> &a,
                                              const std::vector<int64_t> &b);
/// Elements of a static shape (1 for a scalar's empty shape).
int64_t numel(const std::vector<int64_t> &shape);

/// What a name in scope refers to.
struct Binding {
  NameRef ref;
  int index;
  SourceRange decl;
};

/// Where an index expression is being used; decides which names it may use.
enum class IndexCtx {
  Const,  ///< a `const`: literals and other consts
  Shape,  ///< tensor/event shapes and `where`: dims and consts
  Range,  ///< a task's domain bounds: dims and consts
  Domain, ///< event indices in waits/notifies: also the task's indices
  Body    ///< a task body: everything in scope
};

class Checker {
public:
  Checker(Program &p, Diag &d, unsigned smem_limit) : prog_(p), diag_(d), smem_limit_(smem_limit) {}

  void run();

private:
  Program &prog_;
  Diag &diag_;
  unsigned smem_limit_; ///< shared memory per CTA of the compilation's targets (smem_budget)
  /// The next Index expression checked is the slice argument of load/store
  /// (set by check_call, consumed by check_expr).
  bool slice_arg_ = false;
  /// The call standing alone as an expression statement: the one place a
  /// statement-only builtin (store) may appear.
  const Expr *stmt_call_ = nullptr;

  // Scopes: a stack of maps; the bottom holds consts (and kernel names).
  std::vector<std::map<std::string, Binding>> scopes_;
  KernelDecl *kernel_ = nullptr;
  TaskDecl *task_ = nullptr;
  Facts facts_;
  /// Task indices whose range had an error, and events whose shape had one:
  /// proofs about them are skipped so one mistake is reported once.
  std::set<std::string> poisoned_vars_;
  std::vector<bool> event_ok_;
  /// A `where` fact is being checked (IndexCtx::Shape covers both).
  bool in_where_ = false;
  /// The part of a task range that reads data is being checked (IndexCtx::Domain).
  bool in_data_range_ = false;

  //===-- Scopes ---------------------------------------------------------===//

  const Binding *lookup(const std::string &name) const;

  /// Declares `name`; reports a redefinition (with a note) if it is taken.
  bool declare(const std::string &name, SourceRange r, NameRef ref, int index);

  std::vector<std::string> visible_names() const;

  void undefined(const std::string &name, SourceRange r, const std::vector<std::string> &candidates,
                 DiagId id);

  //===-- Constants ------------------------------------------------------===//

  void check_consts();

  //===-- Kernels --------------------------------------------------------===//

  void check_kernel(KernelDecl &k);

  /// `where` clauses: every one must be a comparison of dim expressions (the
  /// runtime evaluates it); the ones the prover understands become facts.
  void check_where(Expr &w);

  /// An index expression used as an extent (shape, domain bound): it must be
  /// exact and, for shapes, positive.
  std::optional<Sym> check_extent(Expr &e, IndexCtx ctx, const char *what);

  /// Reports the first division in `e` that may drop a remainder.
  bool report_inexact(const Expr &e);

  /// After an error that `a >= b` could not be proved: a note with the
  /// `where` clause over the kernel's dims that would prove it, if the
  /// prover finds one (Facts::missing_fact).
  void note_missing_where(const Sym &a, const Sym &b);

  //===-- Tasks ----------------------------------------------------------===//

  void check_task(TaskDecl &t);

  void check_event_ref(EventRef &r);

  /// `t[i, j]` in an event index: one element of an integer tensor (every
  /// component a scalar index). Its value is an opaque symbol named after
  /// the read; reads_data marks it (and, through mark_reads_data, whatever
  /// is computed from it).
  Type check_element_read(Expr &e, IndexCtx ctx);

  static bool has_range_component(const Expr &e);

  static bool has_element_read(const Expr &e);

  /// Domain variable `i` of `t` whose upper bound reads tensor data: it must
  /// be `min(<reads data>, <bound without data>)` (either order), the only
  /// such variable; the data part may use the variables before it.
  void check_data_bound(TaskDecl &t, size_t i);

  /// Waits and notifies of a group with a data-dependent range may use only
  /// the variables before it (its tasks are pushed when the range is known,
  /// with their waits already done and their notifications counted).
  void check_data_bound_edges(const TaskDecl &t, const std::vector<EventRef> &refs,
                              const char *verb);

  /// Sets reads_data on every node computed from an element read.
  static bool mark_reads_data(Expr &e);

  //===-- Statements -----------------------------------------------------===//

  void check_stmt(Stmt &s);

  //===-- Index expressions ----------------------------------------------===//

  /// Checks an integer index expression; returns its Sym, or nullopt after
  /// reporting an error (or if an operand already had one).
  std::optional<Sym> check_index(Expr &e, IndexCtx ctx);

  /// A value in a task body (tile, scalar, or index).
  Type check_value(Expr &e) { return check_expr(e, IndexCtx::Body); }

  Type set(Expr &e, Type t);

  Type check_expr(Expr &e, IndexCtx ctx);

  Type check_name(Expr &e, IndexCtx ctx);

  /// A scalar parameter outside a task body's values (shape, range, event
  /// index, `where`): reports it, with a note suggesting a dim.
  Type scalar_param_misuse(Expr &e, IndexCtx ctx);

  /// `e`, which should have been an index, mentions a scalar parameter:
  /// reports ScalarParamAsIndex at that name and returns true.
  bool report_scalar_index(const Expr &e);

  Type check_unary(Expr &e, IndexCtx ctx);

  Type check_binary(Expr &e, IndexCtx ctx);

  static bool is_comparison(BinOp op);
  /// A bit operator of two constant indices, folded (i64 semantics).
  static int64_t fold_bits(BinOp op, int64_t a, int64_t b);
  /// Why `&`, `~`, ... reject two index operands (dims, task and loop indices).
  static constexpr const char *kIndexBitsNote =
      "index expressions (dims, task and loop indices); bit operations apply to integer tiles "
      "and scalars, and to constants (`1 << 7`)";

  /// Comparisons (numeric operands, broadcast, bool result) and `&&`/`||`
  /// (bool operands) of tiles and scalars.
  std::optional<Type> logic(Type a, Type b, Expr &e);
  std::optional<Type> bits(Type a, Type b, Expr &e);

  /// The common type of two element-wise operands: an index adopts the other
  /// operand's element type, element types must match, shapes broadcast.
  std::optional<Type> unify(Type a, Type b, SourceRange r);

  /// `1.5`, `-2.0`, `inf`, `-inf`, or the name of a float `const`.
  bool is_float_literal(const Expr &e) const;

  /// The value of a float constant's initialiser: a float literal, possibly
  /// negated (checked before names are resolved, so `inf` is spelled out).
  static std::optional<double> float_literal_value(const Expr &e);

  /// Typing rule for float literals: one combined with a float tile or scalar
  /// takes its element type (`h * 0.5` stays f16); one combined with an
  /// integer tile or scalar is an error. `lit` is the literal's type.
  bool adopt_float_literal(Type &lit, const Expr &lit_expr, const Type &other, SourceRange r);
  /// pow(x, y): float operands, broadcast (check_builtins.cpp).
  Type check_pow(Expr &e);

  /// Element-wise arithmetic of tiles and scalars. Integer indices and
  /// literals mixed with float values take the float's type.
  std::optional<Type> arith(Type a, Type b, BinOp op, SourceRange r);
  bool float_into_int(const Type &v, const Type &target, SourceRange r);
  bool scratch_fits(const std::string &op, const Type &v, SourceRange r);

  //===-- Slices ---------------------------------------------------------===//

  /// A slice's components: scalar indices, ranges `lo .. hi` / `lo .. +n`
  /// (constant extent), and gather indices (1-D i32/i64 tiles). Gather
  /// components are zipped into one tile dim at the first one's position,
  /// so they must have the same length. The slice's type records the tile
  /// shape; a component that is a gather index keeps its tile type, which is
  /// how lowering tells it from a scalar index.
  Type check_slice(Expr &e);

  /// A gather component `c` (already typed as a tile) of a slice of `tensor`:
  /// a 1-D integer tile; the first one adds a tile dim to `shape`, later ones
  /// must match its length.
  bool check_gather(const std::string &tensor, Expr &c, const Expr *&first,
                    std::vector<int64_t> &shape);

  /// Where a slice's tile dims come from, for a note: the gather index that
  /// sizes dim `d`, or null.
  static const Expr *gather_of_dim(const Expr &slice, size_t d);

  /// `mask = m` of a load/store: an integer (or bool) tile or scalar whose
  /// shape broadcasts to the slice's shape.
  bool check_mask(Expr &call, const std::vector<int64_t> &slice_shape);

  /// Element types a mask may have: non-zero integers are on.
  static bool is_mask_elem(ElemType t) { return is_integer(t) || t == ElemType::Bool; }

  //===-- Calls ----------------------------------------------------------===//

  /// Checks that `e` has exactly `n` positional args and only `kws` keywords.
  bool arity(Expr &e, size_t n, const std::string &what,
             std::initializer_list<const char *> kws = {});

  const KwArg *kwarg(const Expr &e, const std::string &name);

  /// A static tile shape from `zeros<f32>[TM, TN]`.
  std::optional<std::vector<int64_t>> static_shape(Expr &call);

  /// `axis = k` of a reduction or expand; k must be in [0, limit).
  std::optional<int64_t> axis_arg(Expr &e, size_t limit, size_t rank);

  Type check_call(Expr &e, IndexCtx ctx);
  /// atomic_add/_max/_min/_cas; `statement`: the call is an expression
  /// statement (no value).
  Type check_atomic(Expr &e, bool statement);

  //===-- Compute builtins: select, arange, cumsum, dot, transpose, argmax --===//

  /// A tile operand of a compute builtin; reports anything else.
  std::optional<Type> tile_arg(Expr &arg);

  /// A literal (`1.5`, `-inf`) that may take the element type of the other operand.
  static bool is_literal(const Expr &e);

  /// A float literal operand takes the other operand's float type
  /// (`select(m, h, 0.0)` or `h > 0.0` with h an f16 tile).
  static void adopt_literal(Type &t, const Expr &e, const Type &other);

  /// Checks the compute builtins; nullopt if `e` is none of them. An error
  /// yields an Unknown type.
  std::optional<Type> check_compute_call(Expr &e);

  /// The most elements a tile may have: 65536, the register file of one SM
  /// (64K 32-bit registers on sm_80 .. sm_90). A tile lives in the registers
  /// of its CTA's threads (lower/body_lowerer.h), so a larger one cannot be held by
  /// any CTA; it would only spill, and the back end unrolls code per register
  /// (a 2^20-element tile took it over 30 s).
  static constexpr int64_t kMaxTileElems = 65536;
  /// The scratch a re-layout, broadcast or mask may stage through (a dot's
  /// depends on its layouts: the driver checks the tile IR's plan): what
  /// every target compiled for leaves after the header (target/target.h,
  /// TargetInfo::smem_budget).
  int64_t scratch_limit() const { return int64_t(smem_limit_) - int64_t(kSmemHeaderBytes); }

  Type not_in_shape(Expr &e);
};

} // namespace etl::sema
