//===- tile/ir.h - The tile IR: SSA tiles with layouts, per task body -----===//
//
// What this owns (the whole folder, compiler/tile/): the tile IR between the
// checked AST and LLVM IR, and the passes over it.
//
//   ops.def    every op, grouped into families, listed once
//   ir.h       values (static-shaped tiles of an element type, or uniform
//              scalars), ops, one TileFunc per task group; the printer
//   build.cpp  AST + task graph -> IR (numpy broadcasts and element type
//              conversions become explicit ops; `var`s in loops become
//              iter_args; waits open and notifies close the body)
//   layout.h   layouts as linear maps (register, lane, warp) -> coordinate
//   assign.cpp the layout pass: memory facts, anchors, propagation,
//              conversions where uses disagree, vector widths, remarks
//   verify.cpp the structural, shape and layout rules of every op
//   pipeline.cpp  software pipelining: mma operand loads of a `for` as a
//              cp.async ring of smem.alloc/async.copy/smem.view ops
//   smem.cpp   the shared-memory allocator: a buffer per staging op, its
//              live range, offsets, which trailing barriers can go
//
// `etlc --emit=tile` prints a kernel's IR before and after layout
// assignment. The LLVM lowering (compiler/lower/lower_tile_*.cpp) consumes
// it for every task body whose ops are all ported (docs/ARCHITECTURE.md has
// the plan and the state of the port, op family by op family).
// Design: shared/design/TILE-IR.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "shape/symbolic.h"
#include "tile/layout.h"

#include <string>
#include <utility>
#include <vector>

namespace etl {

enum class TileOpKind {
#define ETL_TILE_OP(K, SPELLING, FAMILY, WHAT) K,
#include "tile/ops.def"
};
enum class OpFamily {
#define ETL_TILE_FAMILY(F, WHAT) F,
#include "tile/ops.def"
};
const char *op_spelling(TileOpKind k);
const char *op_kind_name(TileOpKind k);
OpFamily op_family(TileOpKind k);
const char *family_name(OpFamily f);
std::vector<TileOpKind> all_tile_ops();

/// An SSA value: a tile (shape non-empty) or a uniform scalar (shape empty;
/// `index`: an i64 index value).
struct TValue {
  ElemType elem = ElemType::F32;
  std::vector<int64_t> shape;
  bool index = false;
  /// A ring of shared-memory slots (smem.alloc, tile/pipeline.cpp): shape
  /// [S, R, C], no registers and no layout.
  bool shared = false;
  int layout = -1; ///< into TileFunc::layouts, after assignment (tiles only)
  bool is_tile() const { return !shape.empty(); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
};

/// One component of a slice: `fix(e)` (a tensor dim held at e), `range(lo,
/// n)` (a tile dim), `gather(%v)` (a tile dim whose coordinates are %v).
struct SlicePart {
  enum Kind { Fix, Range, Gather } kind = Fix;
  std::optional<Sym> at; ///< Fix: the index; Range: lo (nullopt: reads data)
  int64_t n = 0;         ///< Range
  int gather = -1;       ///< Gather: value id (operand)
  int tile_dim = -1;     ///< Range, Gather: the tile dim it feeds
};

/// What the layout pass found out about a load or store.
struct MemFacts {
  bool analysed = false;
  int fast_dim = -1;      ///< the tile dim contiguous in memory, or -1
  int64_t contiguity = 1; ///< contiguous elements along it (power of two)
  unsigned vec = 1;       ///< elements per access
  unsigned vec_bits = 0;  ///< vec * element bits
  /// The widest vector alignment and contiguity allow, without the cap of
  /// elements per thread: a load whose layout the layout pass takes from a
  /// use that holds more per thread (a broadcast operand) widens up to it.
  unsigned align_vec = 1;
  bool non_coherent = false; ///< the tensor is never written by the kernel
  /// Every element offset of the tensor fits in 31 bits (the `where` facts
  /// bound its size): index arithmetic can be 32-bit.
  bool index32 = false;
  /// Per tile dim: the slice provably lies inside the tensor along it (no
  /// per-element bounds test needed).
  std::vector<bool> in_bounds;
  std::string narrowed_by; ///< why vec is below the widest (printed)
};

struct TOp {
  TileOpKind kind = TileOpKind::Const;
  std::vector<int> operands;
  std::vector<int> results;
  std::string attr;       ///< op name (add, exp, sum, ...), constant, event ...
  std::optional<Sym> sym; ///< Index: the expression (nullopt: reads data)
  int axis = -1;
  SourceRange loc;
  // Memory:
  int tensor = -1;
  std::string tensor_name;
  std::vector<SlicePart> parts;
  int mask = -1;   ///< operand id of mask=, or -1
  std::string pad; ///< load pad= when a constant (printed), empty: 0
  /// Operand id of a load's pad= that is no constant (a scalar of the
  /// loaded type: a scalar parameter, an index expression), or -1.
  int pad_value = -1;
  /// A CTA barrier goes before the access: an earlier access of the task
  /// may conflict (sema/hazards.h, Expr::barrier_before).
  bool barrier_before = false;
  MemFacts mem;
  // Control: for var in lo .. hi step s; `block_args` are the iter_args
  // inside `body` (operands: the initial values; results: the final ones).
  // An `if`: operands the condition, then the initial values; `body` ends
  // in the yield of the values it takes when the condition holds.
  std::string var;
  std::optional<Sym> lo, hi;
  int64_t step = 1;
  std::vector<int> block_args;
  std::vector<TOp> body;
  // Event: the event and its indices (printed; `*` for all).
  std::vector<std::string> event_idx;
  // Convert: the path (after assignment).
  ConvertPath path = ConvertPath::None;
  /// Its shared-memory buffer (index into TileFunc::smem, after
  /// plan_shared), or -1: the op stages nothing in shared memory.
  int smem = -1;
};

/// A shared-memory buffer of a task body (tile/smem.cpp): the scratch one
/// op stages through (a re-layout, a cross-warp reduction, a dot's
/// operands). Written before the op's own barrier, read after it; its
/// bytes are busy from the op (`pos`) up to the next barrier every thread
/// passes after the reads: the op's trailing barrier when `barrier_after`,
/// else the next buffer's barrier along every path (loops wrap), which
/// `live` lists as inclusive segments of op positions (pre-order, from 0).
struct SmemBuffer {
  int pos = 0;
  std::string what; ///< the op, e.g. "reduce %5"
  SourceRange loc; ///< its op's (the over-budget error points at the largest)
  int64_t bytes = 0, align = 16;
  std::vector<std::pair<int, int>> live;
  int64_t offset = -1; ///< from the scratch start (after the 32-byte header)
  bool barrier_after = true;
  /// A ring (smem.alloc): live across its whole loop while copies are in
  /// flight, so it lies past every other buffer (no reuse, no barrier).
  bool ring = false;
};

struct TileFunc {
  std::string name;              ///< the task group
  std::vector<std::string> vars; ///< its domain variables
  std::vector<TValue> values;
  std::vector<TOp> body;
  std::vector<Layout> layouts; ///< after assignment: #L0, #L1, ...
  bool assigned = false;
  /// The first construct of the body the IR does not express (a builtin or
  /// expression build_tile_ir has no op for); empty when it expresses all.
  /// Sema keeps checked programs clear of them: the back end reports one as
  /// an internal compiler error.
  std::string untiled;
  /// After plan_shared: the buffers and the scratch bytes they take (the
  /// most a buffer ends at); `smem_op_by_op`: what reusing the area op by
  /// op (every buffer at 0, a barrier after each) takes.
  std::vector<SmemBuffer> smem;
  int64_t smem_bytes = 0, smem_op_by_op = 0;
  bool smem_planned = false;
  /// The scratch bytes the compilation's targets allow (TargetInfo::
  /// smem_budget less the shared-memory header), set by plan_shared.
  int64_t smem_budget = 0;
  /// Every target of the compilation has wgmma (TargetInfo::wgmma, set by
  /// the driver before assign_layouts): tensor-core dots that fit take
  /// wgmma's layouts, rings and ops (tile/mma.cpp wgmma_gap).
  bool wgmma = false;
};

/// The values a store or atomic writes, its first operands (the gathers
/// and the mask follow): 1, 2 for atomic_cas (expected, desired), 0 for
/// other ops.
inline size_t value_operands(const TOp &op) {
  if (op.kind == TileOpKind::Store)
    return 1;
  if (op.kind == TileOpKind::Atomic)
    return op.attr == "cas" ? 2 : 1;
  return 0;
}

/// A tensor map the runtime encodes at bind time (cuTensorMapEncodeTiled)
/// for a TMA ring's copies (tile/pipeline.cpp, kTmaRing): tensor `tensor`
/// of the kernel, rows of `box` elements (outermost first; the tile's
/// shape), its out-of-bounds elements zero.
struct TmaMap {
  int tensor = -1;
  std::vector<int64_t> box;
  bool operator==(const TmaMap &o) const { return tensor == o.tensor && box == o.box; }
};

struct TileModule {
  std::string kernel;
  unsigned threads = 128;
  std::vector<TileFunc> funcs;
  /// The tensor maps TMA copies read, in their argument-block order.
  std::vector<TmaMap> tma_maps;
};

struct TaskGraph;
/// The IR of every task body of `k` (checked by sema, with its task graph).
/// `threads`: threads per CTA (tile ops use the largest power-of-two warp
/// count <= threads / 32).
TileModule build_tile_ir(const KernelDecl &k, const TaskGraph &g, const Program &p,
                         unsigned threads);
/// Warps tile ops use.
unsigned tile_warps(unsigned threads);

std::string print_tile(const TileModule &m);
/// A number of the IR's text (a `Const` op's attr, a load's `pad`), as
/// build_tile_ir writes it: the fewest digits that read back exactly,
/// `inf` / `-inf`; empty reads as 0. `ok` (when given): the whole text was
/// a number.
double tile_number(const std::string &text, bool *ok = nullptr);
std::string value_type_str(const TileFunc &f, int v);

} // namespace etl
