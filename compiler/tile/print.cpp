//===- tile/print.cpp - Op tables and the text form of the tile IR --------===//
//
// The names generated from tile/ops.def and `--emit=tile`'s printer:
//
//   task partial[i, j]
//     #L0 = ll<16x128 reg=[...] lane=[...] warp=[...]>   // blocked vec=4 order=[1,0]
//     %0 = load x[range(16*i, 16), range(128*j, 128)] : tile<16x128xf32, #L0> {vec=4 ...}
//
//===----------------------------------------------------------------------===//
#include "tile/ir.h"
#include "tile/passes.h"

#include <sstream>

namespace etl {

namespace {
struct OpInfo {
  const char *spelling, *name;
  OpFamily family;
};
const OpInfo kOps[] = {
#define ETL_TILE_OP(K, SPELLING, FAMILY, WHAT) {SPELLING, #K, OpFamily::FAMILY},
#include "tile/ops.def"
};
const char *kFamilies[] = {
#define ETL_TILE_FAMILY(F, WHAT) #F,
#include "tile/ops.def"
};
} // namespace

const char *op_spelling(TileOpKind k) { return kOps[size_t(k)].spelling; }
const char *op_kind_name(TileOpKind k) { return kOps[size_t(k)].name; }
OpFamily op_family(TileOpKind k) { return kOps[size_t(k)].family; }
const char *family_name(OpFamily f) { return kFamilies[size_t(f)]; }
std::vector<TileOpKind> all_tile_ops() {
  return {
#define ETL_TILE_OP(K, SPELLING, FAMILY, WHAT) TileOpKind::K,
#include "tile/ops.def"
  };
}

std::string value_type_str(const TileFunc &f, int v) {
  const TValue &t = f.values[size_t(v)];
  if (t.index)
    return "index";
  if (!t.is_tile())
    return spelling(t.elem);
  std::string s = t.shared ? "smem<" : "tile<";
  for (int64_t d : t.shape)
    s += std::to_string(d) + "x";
  s += spelling(t.elem);
  if (t.layout >= 0)
    s += ", #L" + std::to_string(t.layout);
  return s + ">";
}

namespace {

std::string ref(int v) { return "%" + std::to_string(v); }

std::string slice_str(const TOp &op) {
  std::string s = op.tensor_name + "[";
  for (size_t i = 0; i < op.parts.size(); ++i) {
    const SlicePart &p = op.parts[i];
    s += i ? ", " : "";
    std::string at = p.at ? p.at->str() : "<data>";
    if (p.kind == SlicePart::Fix)
      s += "fix(" + at + ")";
    else if (p.kind == SlicePart::Range)
      s += "range(" + at + ", " + std::to_string(p.n) + ")";
    else
      s += "gather(" + ref(p.gather) + ")";
  }
  return s + "]";
}

std::string mem_facts(const TOp &op) {
  const MemFacts &m = op.mem;
  if (!m.analysed)
    return "";
  std::string s = " {vec=" + std::to_string(m.vec) + " (" + std::to_string(m.vec_bits) + "-bit)";
  if (!m.narrowed_by.empty())
    s += ", narrowed: " + m.narrowed_by;
  if (m.non_coherent)
    s += ", nc";
  if (m.index32)
    s += ", idx32";
  std::string b;
  bool any = false;
  for (size_t d = 0; d < m.in_bounds.size(); ++d) {
    b += (d ? "," : "") + std::string(m.in_bounds[d] ? "in" : "checked");
    any = true;
  }
  if (any)
    s += ", bounds=[" + b + "]";
  return s + "}";
}

class Printer {
public:
  Printer(const TileFunc &f, std::ostringstream &os) : f_(f), os_(os) {}

  void ops(const std::vector<TOp> &body, int depth) {
    for (const TOp &op : body)
      one(op, depth);
  }

private:
  const TileFunc &f_;
  std::ostringstream &os_;

  std::string type(int v) { return value_type_str(f_, v); }

  std::string list(const std::vector<int> &vs) {
    std::string s;
    for (size_t i = 0; i < vs.size(); ++i)
      s += (i ? ", " : "") + ref(vs[i]);
    return s;
  }

  void one(const TOp &op, int depth) {
    std::string ind(size_t(depth) * 2, ' ');
    os_ << ind;
    if (op.kind != TileOpKind::For && !op.results.empty())
      os_ << list(op.results) << " = ";
    const std::string res_type = op.results.empty() ? "" : " : " + type(op.results[0]);
    switch (op.kind) {
    case TileOpKind::Index:
    case TileOpKind::Const:
      os_ << op_spelling(op.kind) << " " << op.attr << res_type;
      break;
    case TileOpKind::Load:
      os_ << "load " << slice_str(op);
      if (op.mask >= 0)
        os_ << " mask=" << ref(op.mask);
      if (!op.pad.empty())
        os_ << " pad=" << op.pad;
      if (op.pad_value >= 0)
        os_ << " pad=" << ref(op.pad_value);
      os_ << res_type << mem_facts(op);
      break;
    case TileOpKind::Store:
      os_ << "store " << slice_str(op) << ", " << ref(op.operands[0]);
      if (op.mask >= 0)
        os_ << " mask=" << ref(op.mask);
      os_ << mem_facts(op);
      if (op.mem.analysed && f_.values[size_t(op.operands[0])].layout >= 0 &&
          f_.layouts[size_t(f_.values[size_t(op.operands[0])].layout)].has_replicas())
        os_ << " {pred: one writer per replica group}";
      break;
    case TileOpKind::Atomic: {
      std::vector<int> vals(op.operands.begin(), op.operands.begin() + long(value_operands(op)));
      os_ << "atomic " << op.attr << " " << slice_str(op) << ", " << list(vals);
      if (op.mask >= 0)
        os_ << " mask=" << ref(op.mask);
      os_ << res_type << mem_facts(op);
      if (op.mem.analysed && f_.values[size_t(op.operands[0])].layout >= 0 &&
          f_.layouts[size_t(f_.values[size_t(op.operands[0])].layout)].has_replicas())
        os_ << " {pred: one writer per replica group}";
      break;
    }
    case TileOpKind::Unary:
    case TileOpKind::Binary:
    case TileOpKind::Compare:
      os_ << "map." << op.attr << " " << list(op.operands) << res_type;
      break;
    case TileOpKind::Reduce:
    case TileOpKind::ArgReduce:
    case TileOpKind::Scan:
      os_ << op_spelling(op.kind) << " " << op.attr << " " << list(op.operands)
          << ", axis=" << op.axis << res_type;
      break;
    case TileOpKind::Expand:
      os_ << "expand " << list(op.operands) << ", axis=" << op.axis << res_type;
      break;
    case TileOpKind::Convert: {
      int from = f_.values[size_t(op.operands[0])].layout;
      os_ << "convert_layout " << list(op.operands) << res_type << " {from=#L" << from
          << ", via=" << convert_path_name(op.path) << "}";
      break;
    }
    case TileOpKind::For: {
      if (!op.results.empty())
        os_ << list(op.results) << " = ";
      os_ << "for " << op.var << " in " << (op.lo ? op.lo->str() : "<data>") << " .. "
          << (op.hi ? op.hi->str() : "<data>");
      if (op.step != 1)
        os_ << " step " << op.step;
      if (!op.block_args.empty()) {
        os_ << " iter_args(";
        for (size_t i = 0; i < op.block_args.size(); ++i)
          os_ << (i ? ", " : "") << ref(op.block_args[i]) << " = " << ref(op.operands[i]) << " : "
              << type(op.block_args[i]);
        os_ << ")";
      }
      os_ << " {\n";
      ops(op.body, depth + 1);
      os_ << ind << "}";
      break;
    }
    case TileOpKind::If: {
      os_ << "if " << ref(op.operands[0]) << " else(";
      for (size_t i = 1; i < op.operands.size(); ++i)
        os_ << (i > 1 ? ", " : "") << ref(op.operands[i]) << " : " << type(op.operands[i]);
      os_ << ") {\n";
      ops(op.body, depth + 1);
      os_ << ind << "}";
      break;
    }
    case TileOpKind::Dot:
      os_ << "dot " << list(op.operands) << res_type;
      if (!op.attr.empty())
        os_ << " {precision=" << op.attr << "}";
      break;
    case TileOpKind::Yield:
      os_ << "yield" << (op.operands.empty() ? "" : " ") << list(op.operands);
      break;
    case TileOpKind::Wait:
    case TileOpKind::Notify: {
      os_ << op_spelling(op.kind) << " " << op.attr << "[";
      for (size_t i = 0; i < op.event_idx.size(); ++i)
        os_ << (i ? ", " : "") << op.event_idx[i];
      os_ << "]";
      break;
    }
    case TileOpKind::AsyncCopy:
      os_ << "async.copy " << ref(op.operands[0]) << "[" << op.sym->str() << "] <- "
          << slice_str(op) << " if " << op.lo->str() << " < " << op.hi->str()
          << (op.attr == kTmaRing ? " {tma map " + std::to_string(op.axis) + "}" : "");
      break;
    case TileOpKind::SmemView:
      os_ << "smem.view " << ref(op.operands[0]) << "[" << op.sym->str() << "]" << res_type;
      break;
    case TileOpKind::AsyncWait:
      os_ << "async.wait " << op.axis;
      break;
    case TileOpKind::WgmmaWait:
      os_ << "wgmma.wait " << op.axis << " " << list(op.operands) << res_type;
      break;
    case TileOpKind::SmemAlloc:
      os_ << "smem.alloc" << res_type << (op.attr.empty() ? "" : " {" + op.attr + "}");
      break;
    default:
      os_ << op_spelling(op.kind) << (op.operands.empty() ? "" : " ") << list(op.operands)
          << res_type;
      break;
    }
    if (op.smem >= 0)
      os_ << " {smem=#S" << op.smem << "}";
    os_ << "\n";
  }
};

} // namespace

namespace {
/// plan_shared's buffers: offset, bytes, alignment, live range (op
/// positions in pre-order from 0), whether the trailing barrier stays.
void print_smem(const TileFunc &f, std::ostringstream &os) {
  if (!f.smem_planned || f.smem.empty())
    return;
  size_t kept = 0;
  for (const SmemBuffer &b : f.smem)
    kept += b.barrier_after ? 1 : 0;
  os << "  // shared memory: " << f.smem.size() << " buffer" << (f.smem.size() == 1 ? "" : "s")
     << ", " << f.smem_bytes << " bytes (op by op: " << f.smem_op_by_op
     << "), trailing barriers kept: " << kept << " of " << f.smem.size() << "\n";
  if (smem_over_budget(f))
    os << "  // shared memory over the budget: " << f.smem_bytes << " bytes of scratch, the "
       << "targets allow " << f.smem_budget << " (a resource-limit error)\n";
  for (size_t i = 0; i < f.smem.size(); ++i) {
    const SmemBuffer &b = f.smem[i];
    os << "  //   #S" << i << " @" << b.offset << " " << b.bytes << " bytes align " << b.align
       << " live [";
    for (size_t k = 0; k < b.live.size(); ++k)
      os << (k ? ", " : "") << b.live[k].first << ".." << b.live[k].second;
    os << "] " << b.what << " (line " << b.loc.begin.line << ")"
       << (b.barrier_after ? ", barrier after" : ", no barrier after") << "\n";
  }
}
} // namespace

std::string print_tile(const TileModule &m) {
  std::ostringstream os;
  os << "tile kernel " << m.kernel << ": " << m.threads << " threads, " << tile_warps(m.threads)
     << " warps for tile ops\n";
  for (const TileFunc &f : m.funcs) {
    os << "\ntask " << f.name << "[";
    for (size_t i = 0; i < f.vars.size(); ++i)
      os << (i ? ", " : "") << f.vars[i];
    os << "]\n";
    for (size_t i = 0; i < f.layouts.size(); ++i)
      os << "  #L" << i << " = " << f.layouts[i].str() << "  // " << f.layouts[i].origin << "\n";
    Printer(f, os).ops(f.body, 1);
    print_smem(f, os);
  }
  return os.str();
}

} // namespace etl
