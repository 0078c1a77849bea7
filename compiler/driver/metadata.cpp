//===- driver/metadata.cpp - What the runtime needs to know ---------------===//
//
// What this owns: build_metadata() and expr_bytecode(); see metadata.h.
//
//===----------------------------------------------------------------------===//
#include "driver/metadata.h"

#include "etl_abi.h"

#include <set>

namespace etl {
namespace {

/// The artifact's code of an element type (etl_abi.h): its ElemType value,
/// both from runtime/abi/etl_elems.def (ast/ast_kinds.cpp checks it). Bool
/// has none: sema rejects bool tensors and scalars (BoolTensor).
uint32_t abi_elem(ElemType t) { return t == ElemType::Bool ? uint32_t(ETL_ELEM_F32) : uint32_t(t); }

void emit(const Expr &e, const Program &p, const std::vector<std::string> &vars,
          std::vector<int64_t> &out) {
  switch (e.kind) {
  case ExprKind::IntLit:
    out.insert(out.end(), {ETL_XOP_CONST, e.int_value});
    return;
  case ExprKind::Name:
    switch (e.ref) {
    case NameRef::Const:
      out.insert(out.end(), {ETL_XOP_CONST, p.consts[e.ref_index].folded});
      return;
    case NameRef::Dim:
      out.insert(out.end(), {ETL_XOP_DIM, e.ref_index});
      return;
    case NameRef::TaskIndex:
      for (size_t v = 0; v < vars.size(); ++v)
        if (vars[v] == e.name) {
          out.insert(out.end(), {ETL_XOP_VAR, int64_t(v)});
          return;
        }
      break;
    default:
      break;
    }
    internal_error("name '" + e.name + "' cannot appear in runtime metadata");
  case ExprKind::Unary:
    if (e.un_op == UnOp::BitNot && e.sym && e.sym->as_constant()) { // folded by sema
      out.insert(out.end(), {ETL_XOP_CONST, *e.sym->as_constant()});
      return;
    }
    emit(*e.args[0], p, vars, out);
    out.push_back(e.un_op == UnOp::Neg ? ETL_XOP_NEG : ETL_XOP_NOT);
    return;
  case ExprKind::Binary: {
    if (is_bit_op(e.bin_op) && e.sym && e.sym->as_constant()) { // constants, folded by sema
      out.insert(out.end(), {ETL_XOP_CONST, *e.sym->as_constant()});
      return;
    }
    emit(*e.args[0], p, vars, out);
    emit(*e.args[1], p, vars, out);
    switch (e.bin_op) {
#define ETL_OP(A, B)                                                                               \
  case BinOp::A:                                                                                   \
    out.push_back(B);                                                                              \
    return;
      ETL_OP(Add, ETL_XOP_ADD)
      ETL_OP(Sub, ETL_XOP_SUB)
      ETL_OP(Mul, ETL_XOP_MUL)
      ETL_OP(Div, ETL_XOP_FLOORDIV)
      ETL_OP(Mod, ETL_XOP_MOD)
      ETL_OP(Eq, ETL_XOP_EQ)
      ETL_OP(Ne, ETL_XOP_NE)
      ETL_OP(Lt, ETL_XOP_LT)
      ETL_OP(Le, ETL_XOP_LE)
      ETL_OP(Gt, ETL_XOP_GT)
      ETL_OP(Ge, ETL_XOP_GE)
      ETL_OP(And, ETL_XOP_AND)
      ETL_OP(Or, ETL_XOP_OR)
#undef ETL_OP
    default: // bit operators: sema rejects them on indices
      break;
    }
    break;
  }
  case ExprKind::Call:
    if (e.args.size() == 2 && is_index_fn(e.builtin)) {
      emit(*e.args[0], p, vars, out);
      emit(*e.args[1], p, vars, out);
      out.push_back(e.builtin == Builtin::Cdiv  ? ETL_XOP_CDIV
                    : e.builtin == Builtin::Min ? ETL_XOP_MIN
                                                : ETL_XOP_MAX);
      return;
    }
    break;
  default:
    break;
  }
  internal_error(std::string("a ") + kind_name(e.kind) +
                 " expression cannot appear in runtime metadata");
}

/// "file:line:col" of a range, for messages the runtime prints.
std::string where(const SourceManager &sm, SourceRange r) {
  return sm.path(r.begin.file) + ":" + std::to_string(r.begin.line) + ":" +
         std::to_string(r.begin.col);
}

} // namespace

std::vector<int64_t> expr_bytecode(const Expr &e, const Program &p,
                                   const std::vector<std::string> &vars) {
  std::vector<int64_t> out;
  emit(e, p, vars, out);
  return out;
}

ArtifactMeta build_metadata(const Program &p, const KernelDecl &k, const TaskGraph &g,
                            const BackendResult &be, const SourceManager &sm) {
  const ArgLayout layout = arg_layout(k);
  ArtifactMeta m;
  m.threads_per_cta = be.threads_per_cta;
  m.smem_bytes = be.smem_bytes;
  m.kernel_name = k.name;
  m.source_path = sm.path(p.file);
  m.num_slots = layout.num_slots();
  for (size_t i = 0; i < k.dims.size(); ++i)
    m.dims.push_back(ArtifactDim{k.dims[i].name, layout.dim(unsigned(i))});
  const std::set<int> written = written_tensors(k);
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    const TensorDecl &t = k.tensors[i];
    ArtifactTensor at;
    at.read_only = !t.is_buffer && !written.count(int(i)) && !written.count(-1);
    at.name = t.name;
    at.elem = abi_elem(t.type.elem);
    at.is_buffer = t.is_buffer;
    at.zeros = t.zeros;
    for (const ExprPtr &e : t.type.shape)
      at.shape.push_back(expr_bytecode(*e, p));
    at.slot = layout.tensor(unsigned(i));
    m.tensors.push_back(std::move(at));
  }
  for (size_t i = 0; i < k.scalars.size(); ++i)
    m.scalars.push_back(
        ArtifactScalar{k.scalars[i].name, abi_elem(k.scalars[i].elem), layout.scalar(unsigned(i))});
  for (const ExprPtr &w : k.where) {
    const std::string &text = sm.text(w->range.begin.file);
    m.constraints.push_back(ArtifactConstraint{
        expr_bytecode(*w, p),
        text.substr(w->range.begin.offset, w->range.end.offset - w->range.begin.offset),
        where(sm, w->range)});
  }
  for (size_t i = 0; i < k.events.size(); ++i) {
    ArtifactEvent ev;
    ev.name = k.events[i].name;
    for (const ExprPtr &e : k.events[i].shape)
      ev.shape.push_back(expr_bytecode(*e, p));
    ev.slot = layout.event(unsigned(i));
    m.events.push_back(std::move(ev));
  }
  for (const TaskGroup &grp : g.groups) {
    ArtifactGroup ag;
    ag.name = grp.name;
    for (const TaskIndexDecl &d : grp.decl->domain)
      ag.domain.emplace_back(expr_bytecode(*d.lo, p),
                             expr_bytecode(d.static_bound ? *d.static_bound : *d.hi, p));
    ag.data_var = grp.decl->data_var >= 0 ? uint32_t(grp.decl->data_var) : ETL_NO_DATA_VAR;
    auto edges = [&](const std::vector<int> &ids, std::vector<ArtifactEdge> &out) {
      for (int id : ids) {
        const Edge &e = g.edges[id];
        ArtifactEdge ae;
        ae.event = uint32_t(e.event);
        for (const EdgeIndex &ix : e.indices) {
          ArtifactIndex ai;
          ai.star = ix.star ? ETL_INDEX_STAR : ix.reads_data ? ETL_INDEX_DATA : ETL_INDEX_EXPR;
          if (!ix.star && !ix.reads_data)
            ai.idx = expr_bytecode(*ix.expr, p, grp.vars);
          ae.index.push_back(std::move(ai));
        }
        out.push_back(std::move(ae));
      }
    };
    edges(grp.notifies, ag.notifies);
    edges(grp.waits, ag.waits);
    ag.schedule = grp.dynamic ? ETL_SCHEDULE_DYNAMIC : ETL_SCHEDULE_STATIC;
    size_t gi = m.groups.size();
    if (gi < g.layer_block.size() && g.layer_block[gi] >= 0)
      ag.layer_block = uint32_t(g.layer_block[gi]) + 1; // 0 is ETL_NO_LAYER_BLOCK
    m.groups.push_back(std::move(ag));
  }
  for (int gi : g.topo_order)
    m.order.push_back(uint32_t(gi));
  for (size_t i = 0; i < be.tma_maps.size(); ++i) {
    ArtifactTmaMap t;
    t.tensor = uint32_t(be.tma_maps[i].tensor);
    t.slot = layout.tma_map(unsigned(i));
    for (int64_t x : be.tma_maps[i].box)
      t.box.push_back(uint32_t(x));
    m.tma_maps.push_back(std::move(t));
  }
  m.num_slots = layout.num_slots(unsigned(m.tma_maps.size()));
  return m;
}

} // namespace etl
