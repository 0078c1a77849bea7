//===- ast/ast.h - The ETL abstract syntax tree ---------------------------===//
//
// What this owns: the tree the frontend builds from a `.etl` file and that
// sema annotates in place. ANTLR types never appear here: the frontend turns
// its parse tree into these nodes (compiler/frontend/ast_builder.cpp) and
// nothing downstream knows ANTLR exists.
//
// Ownership: a Program owns its declarations through unique_ptr; children are
// owned by their parent. Sema fills the fields marked "sema:" and never
// restructures the tree, so every node keeps the source range it was parsed
// from and diagnostics can always point at user text.
//
// Node kinds are listed once in ast/kinds.def (X-macros): the enums below,
// their names (kind_name) and the printer (--emit=ast) are generated from it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/builtins.h"
#include "diag/source.h"
#include "shape/symbolic.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace etl {

//===-- Kinds ------------------------------------------------------------===//

enum class ExprKind {
#define ETL_EXPR(K, DOC) K,
#include "ast/kinds.def"
};
enum class StmtKind {
#define ETL_STMT(K, DOC) K,
#include "ast/kinds.def"
};
enum class DeclKind {
#define ETL_DECL(K, DOC) K,
#include "ast/kinds.def"
};
enum class BinOp {
#define ETL_BINOP(K, SPELLING) K,
#include "ast/kinds.def"
};
enum class UnOp {
#define ETL_UNOP(K, SPELLING) K,
#include "ast/kinds.def"
};
/// Element types of tensors, tiles and scalars.
enum class ElemType {
#define ETL_ELEM(K, SPELLING, BITS) K,
#include "ast/kinds.def"
};

const char *kind_name(ExprKind k);
const char *kind_name(StmtKind k);
const char *kind_name(DeclKind k);
const char *spelling(BinOp op);
const char *spelling(UnOp op);
const char *spelling(ElemType t);
/// Bytes of one element in memory; a packed 4-bit type counts its byte (1).
unsigned byte_size(ElemType t);
/// Bits of one element in memory (4 for i4/u4).
unsigned elem_bits(ElemType t);
/// Parses an element type's spelling ("f32", "u8", "i4", ...); nullopt otherwise.
std::optional<ElemType> parse_elem_type(const std::string &s);
bool is_float(ElemType t);
/// `& | ^ << >>`.
bool is_bit_op(BinOp op);
/// Any integer type, signed or unsigned, packed or not (not bool).
bool is_integer(ElemType t);
/// u4, u8, u16, u32: `>>` is logical, `/ %` and comparisons unsigned,
/// conversions zero-extend.
bool is_unsigned(ElemType t);
/// i4, u4: two elements per byte, low nibble first; tensors only.
bool is_packed(ElemType t);
/// The tile element type a load of a tensor of `t` gives (i4 -> i8, u4 -> u8;
/// others unchanged).
ElemType loaded_elem(ElemType t);

//===-- Types (filled by sema) -------------------------------------------===//

/// What an expression denotes after sema.
enum class TypeKind {
  Unknown, ///< not checked yet, or an error was reported for it
  Index,   ///< a scalar i64 index value (task index, loop var, dim, const)
  Scalar,  ///< a scalar of `elem` (float literal, -inf, ...)
  Tile,    ///< a register tile of `elem` with static `tile_shape`
  Tensor,  ///< a global tensor (parameter or buffer); `tensor_shape` symbolic
  Slice,   ///< a slice of a tensor: only as the operand of load/store
};

struct Type {
  TypeKind kind = TypeKind::Unknown;
  ElemType elem = ElemType::F32;
  std::vector<int64_t> tile_shape; ///< Tile (and Slice: the tile it moves)
  std::vector<Sym> tensor_shape;   ///< Tensor
  bool is_tile() const { return kind == TypeKind::Tile; }
};

//===-- Expressions ------------------------------------------------------===//

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// A keyword argument of a call: `axis = 1`, `pad = -inf`.
struct KwArg {
  std::string name;
  SourceRange name_range;
  ExprPtr value;
};

/// What a Name refers to (filled by sema).
enum class NameRef {
  Unresolved,
  Const,     ///< a top-level `const`
  Dim,       ///< a symbolic `dim` parameter of the kernel
  Tensor,    ///< a tensor parameter or a `buffer`
  Scalar,    ///< a scalar parameter (`eps: f32`): a run-time value, never an index
  TaskIndex, ///< an index variable of the enclosing task's domain
  LoopVar,   ///< the variable of an enclosing `for`
  Local,     ///< a `let`/`var` in a task body
  Builtin,   ///< `inf`
};

/// One expression node. A single struct rather than a class hierarchy keeps
/// the builder, the printer and the visitors small; which fields are used
/// depends on `kind` (see ast/kinds.def).
struct Expr {
  ExprKind kind;
  SourceRange range;

  int64_t int_value = 0;  ///< IntLit
  double float_value = 0; ///< FloatLit
  std::string name;       ///< Name, Call (callee)
  BinOp bin_op = BinOp::Add;
  UnOp un_op = UnOp::Neg;
  /// Unary/Binary operands; Call positional args; Index: [base, components...]
  /// where each component is an index expression or a Range; Range: [lo, hi]
  /// (hi is the extent itself when `plus_extent`).
  std::vector<ExprPtr> args;
  std::vector<KwArg> kwargs;        ///< Call
  std::optional<ElemType> type_arg; ///< Call: zeros<f32>, cast<f16>, ...
  std::vector<ExprPtr> shape_args;  ///< Call: zeros<f32>[TM, TN]
  SourceRange callee_range;         ///< Call: the callee's name
  bool plus_extent = false;         ///< Range written `lo .. +extent`

  // sema:
  Type type;
  NameRef ref = NameRef::Unresolved;
  int ref_index = -1; ///< index into the kernel's dims/tensors/task indices...
  /// Call: the builtin the callee resolved to (None if unknown). Later
  /// stages switch on it rather than on the callee's name.
  Builtin builtin = Builtin::None;
  /// Index-valued expressions: the value as a symbolic expression over dims,
  /// task indices ("%i") and loop variables, when sema could form one.
  std::optional<Sym> sym;
  /// The value depends on tensor contents (an element read such as
  /// `idx[0]`, or arithmetic on one): `sym` is then an opaque symbol named
  /// after the read, which no prover fact can bound; such indices are
  /// range-checked on the device at run time.
  bool reads_data = false;
  /// A load, store or element read that may touch what an earlier access of
  /// the same task touched from another thread (sema/hazards.h): the
  /// lowering puts a CTA barrier right before the access.
  bool barrier_before = false;

  Expr(ExprKind k, SourceRange r) : kind(k), range(r) {}
};

//===-- Statements (task bodies) -----------------------------------------===//

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

/// One statement of a task body.
struct Stmt {
  StmtKind kind;
  SourceRange range;
  std::string name; ///< Let/Var/Assign: the variable; For: loop var
  SourceRange name_range;
  BinOp assign_op = BinOp::Add;   ///< Assign: `+=` etc. (only if compound)
  bool compound = false;          ///< Assign: `x op= e` rather than `x = e`
  ExprPtr value;                  ///< Let/Var/Assign value; ExprStmt
  ExprPtr lo, hi, step;           ///< For: `for v in lo .. hi step s` (step opt.)
  std::vector<StmtPtr> body;      ///< For; If: the then branch (value: the condition)
  std::vector<StmtPtr> else_body; ///< If: the else branch (may be empty)

  // sema:
  int local_index = -1; ///< Let/Var/Assign: slot in TaskDecl::locals; For: loop slot

  Stmt(StmtKind k, SourceRange r) : kind(k), range(r) {}
};

//===-- Declarations -----------------------------------------------------===//

/// `tensor<f32>[M, N]`
struct TensorType {
  ElemType elem = ElemType::F32;
  SourceRange elem_range;
  std::vector<ExprPtr> shape;
  SourceRange range;
};

/// `const TM = 16;`
struct ConstDecl {
  std::string name;
  SourceRange name_range;
  ExprPtr value;
  SourceRange range;
  int64_t folded = 0; ///< sema: the constant's value (integer constants)
  /// sema: `const SCALE = 0.125;` — a float constant (a float literal,
  /// possibly negated); it is a scalar value in task bodies, never an index.
  bool is_float = false;
  double float_folded = 0;
  /// A tunable (`const TK = 64 in [16, 32, 64] where ...;`): its candidate
  /// values and the constraints between tunables; empty for a plain const.
  std::vector<ExprPtr> candidates;
  std::vector<ExprPtr> where;
  /// The value written in the source (the default): `value` before a -D or
  /// a --variant pinned another one (driver/defines.cpp), else null.
  ExprPtr default_value;
  /// sema: the candidates' values (integers in folded_candidates, floats in
  /// float_candidates) and the default's.
  std::vector<int64_t> folded_candidates;
  std::vector<double> float_candidates;
  int64_t folded_default = 0;
  double float_default = 0;
  bool tunable() const { return !candidates.empty(); }
};

/// `M: dim` in `kernel k<M: dim, ...>`.
struct DimDecl {
  std::string name;
  SourceRange range;
};

/// A tensor parameter `x: tensor<f32>[M, N]` or a `buffer` intermediate.
struct TensorDecl {
  std::string name;
  SourceRange name_range;
  TensorType type;
  bool is_buffer = false;
  bool zeros = false; ///< `buffer x: ... = zeros;`: cleared by the runtime before each run
  SourceRange range;
  std::vector<Sym> shape; ///< sema
};

/// A scalar parameter `eps: f32`: a value of its element type bound at run
/// time (etlBindScalar) and read from the argument block. It can be used
/// as a value in task bodies, never in shapes, indices or `where` facts.
struct ScalarDecl {
  std::string name;
  SourceRange name_range;
  ElemType elem = ElemType::F32;
  SourceRange elem_range;
  SourceRange range;
};

/// `event E[cdiv(M, TM)];`
struct EventDecl {
  std::string name;
  SourceRange name_range;
  std::vector<ExprPtr> shape;
  SourceRange range;
  std::vector<Sym> sym_shape; ///< sema
};

/// `E[i, *]` in a `waits` or `notifies` clause. A null index is `*`.
struct EventRef {
  std::string event;
  SourceRange event_range;
  std::vector<ExprPtr> indices; ///< nullptr for `*`
  SourceRange range;
  int event_index = -1; ///< sema: index into KernelDecl::events
};

/// `i in 0 .. cdiv(M, TM)` in a task's domain.
struct TaskIndexDecl {
  std::string name;
  SourceRange name_range;
  ExprPtr lo, hi;
  SourceRange range;
  // sema, when `hi` reads tensor data (`min(cdiv(count[e], TM), cdiv(T, TM))`):
  const Expr *data_bound = nullptr;   ///< the argument of min that reads data
  const Expr *static_bound = nullptr; ///< the other: the largest extent's bound
};

/// A local `let`/`var` of a task body, collected by sema.
struct LocalVar {
  std::string name;
  bool is_var = false;
  Type type;
  /// An index-valued `let` (`let row0 = i * TM;`): its value, so uses keep
  /// the symbolic form (and whether it reads tensor data).
  std::optional<Sym> sym;
  bool reads_data = false;
};

/// `task name[i in .., j in ..] waits ... notifies ... { body }`
/// `schedule static` / `schedule dynamic` on a kernel or task; None when
/// absent.
enum class ScheduleKind { None, Static, Dynamic };

struct TaskDecl {
  std::string name;
  SourceRange name_range;
  std::vector<TaskIndexDecl> domain;
  ScheduleKind schedule = ScheduleKind::None;
  SourceRange schedule_range; ///< the clause, when present
  std::vector<EventRef> waits;
  std::vector<EventRef> notifies;
  std::vector<StmtPtr> body;
  SourceRange range;

  // sema:
  std::vector<LocalVar> locals; ///< indexed by Stmt::local_index
  /// The domain variable whose range reads tensor data, or -1. Such a group
  /// is always dynamic; its tasks are known once the range is evaluated.
  int data_var = -1;
  int num_loops = 0; ///< `for` loops, indexed by For local_index
};

/// `kernel name<dims>(params) where ... { buffers, events, tasks }`
struct KernelDecl {
  std::string name;
  SourceRange name_range;
  std::vector<DimDecl> dims;
  std::vector<TensorDecl> tensors;            ///< parameters first, then buffers
  std::vector<ScalarDecl> scalars;            ///< scalar parameters, in source order
  std::vector<ExprPtr> where;                 ///< constraints
  ScheduleKind schedule = ScheduleKind::None; ///< default of its tasks
  SourceRange schedule_range;
  std::vector<EventDecl> events;
  std::vector<TaskDecl> tasks;
  SourceRange range;
  int num_params = 0; ///< tensors[0 .. num_params) are parameters
  /// sema: what the `where` clauses and the language (every dim >= 1)
  /// guarantee, for the analyses after sema (schedule/races.h).
  Facts facts;
};

/// A parameter of a `fn`: untyped, it takes the type of each call's argument.
struct FnParam {
  std::string name;
  SourceRange range;
};

/// `fn name(a, b) { body; return ret; }`: a tile function, generic over the
/// types of its arguments. compiler/inline expands every call in place (sema
/// never sees a call of a fn, nor the fn itself).
struct FnDecl {
  std::string name;
  SourceRange name_range;
  std::vector<FnParam> params;
  std::vector<StmtPtr> body; ///< the statements before `return`
  ExprPtr ret;               ///< the returned expression (null: missing return)
  SourceRange ret_range;     ///< the `return ...;` statement
  SourceRange range;
};

/// `import std.math;`: path = {"std", "math"}.
struct ImportDecl {
  std::vector<std::string> path;
  SourceRange range;
  /// "std.math"
  std::string dotted() const {
    std::string s;
    for (size_t i = 0; i < path.size(); ++i)
      s += (i ? "." : "") + path[i];
    return s;
  }
};

/// A whole `.etl` file.
struct Program {
  FileId file = 0;
  std::vector<ImportDecl> imports;
  std::vector<ConstDecl> consts;
  std::vector<FnDecl> fns; ///< after load_imports: also those of imported modules
  std::vector<KernelDecl> kernels;
};

/// The keyword argument `name` of a call, or null.
const KwArg *find_kwarg(const Expr &call, const char *name);

/// The compile-time integer `e` stands for: an integer literal, an integer
/// `const`, `-`, `+`, `-` and `*` of those, or an expression sema's symbolic
/// shape folded to a constant. For axes and static extents.
std::optional<int64_t> static_int(const Program &p, const Expr &e);

/// The tensor a slice `T[...]` (an Index expression) names, or -1.
int slice_tensor(const Expr &slice);

/// Tensors some task of `k` stores to or updates atomically, at any depth
/// (loops, both branches of an `if`); -1 in the set: a store whose tensor is
/// unknown, so every tensor may be written. Loads of the others may take the
/// non-coherent path and run before a task's waits.
std::set<int> written_tensors(const KernelDecl &k);

/// Prints the tree in the stable text form read by golden tests
/// (`etlc --emit=ast`).
std::string print_ast(const Program &p, const SourceManager &sm);

} // namespace etl
