//===- lsp/hover.cpp - Hover text ---------------------------------------------===//
//
// A name's hover is its declaration as written (lsp/index.cpp), then what
// the compiler knows of it, keyed by the declaration's position:
//
//   tensor, buffer   tensor<bf16>[M, K] (sema's symbolic shape), row-major
//   let/var          its type after sema: tile<f32>[16, 128], an index and
//                    its symbolic value, a scalar; for a tile, the layout
//                    the tile IR assigned to the value it is bound to, or
//                    "layout: chosen at lowering" where the IR was not built
//                    (an error before it) or the value has no op of its own
//   const            its folded value
//   event            its symbolic shape
//
// A let inside a fn has one type per call (compiler/inline expands each call
// with the types of its arguments): every distinct one is listed. A
// builtin's hover is its line of ast/builtins.def.
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"
#include "ast/walk.h"
#include "driver/pipeline.h"
#include "lsp/analysis.h"
#include "sema/checker.h"
#include "tile/ir.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace etl::lsp {
namespace {

using sema::shape_str; // "[M, K]", "[16, 128]": as sema's messages write shapes

struct BuiltinRow {
  const char *name, *what;
};
const BuiltinRow kBuiltins[] = {
#define ETL_BUILTIN(E, NAME, WHAT) {NAME, WHAT},
#include "ast/builtins.def"
};

std::string type_str(const Type &t) {
  switch (t.kind) {
  case TypeKind::Tile:
  case TypeKind::Slice:
    return std::string("tile<") + spelling(t.elem) + ">" + shape_str(t.tile_shape);
  case TypeKind::Tensor:
    return std::string("tensor<") + spelling(t.elem) + ">" + shape_str(t.tensor_shape);
  case TypeKind::Index:
    return "index";
  case TypeKind::Scalar:
    return std::string(spelling(t.elem)) + " scalar";
  case TypeKind::Unknown:
    break;
  }
  return "";
}

/// The outermost op of `ops` (nested bodies included) built for the
/// expression at `r`, whose result is a tile with a layout: the last one in
/// pre-order.
const TOp *op_at(const std::vector<TOp> &ops, const TileFunc &f, const std::string &path,
                 const SourceManager &sm, const SourceRange &r) {
  const TOp *found = nullptr;
  for (const TOp &op : ops) {
    if (op.loc.valid() && op.loc.begin.offset == r.begin.offset &&
        op.loc.end.offset == r.end.offset && op.loc.begin.file < sm.file_count() &&
        sm.path(op.loc.begin.file) == path && !op.results.empty()) {
      const TValue &v = f.values[size_t(op.results[0])];
      if (v.is_tile() && v.layout >= 0 && size_t(v.layout) < f.layouts.size())
        found = &op;
    }
    if (const TOp *in = op_at(op.body, f, path, sm, r))
      found = in;
  }
  return found;
}

class Facts {
public:
  Facts(const Compilation &c, const TileModule *tiles, Analysis &a)
      : sm_(c.sm), tiles_(tiles), a_(a) {}

  void run(const Program &p) {
    for (const ConstDecl &c : p.consts)
      if (c.value && c.value->kind != ExprKind::IntLit && c.value->kind != ExprKind::FloatLit &&
          c.value->type.kind != TypeKind::Unknown)
        add(c.name_range, "= " + (c.is_float ? fmt(c.float_folded) : std::to_string(c.folded)));
    for (const KernelDecl &k : p.kernels)
      kernel(k);
  }

private:
  const SourceManager &sm_;
  const TileModule *tiles_;
  Analysis &a_;

  static std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

  void add(const SourceRange &r, const std::string &line) {
    if (!r.valid() || r.begin.file >= sm_.file_count() || line.empty())
      return;
    std::vector<std::string> &lines = a_.facts[{sm_.path(r.begin.file), r.begin.offset}];
    if (std::find(lines.begin(), lines.end(), line) == lines.end())
      lines.push_back(line);
  }

  void kernel(const KernelDecl &k) {
    for (const TensorDecl &t : k.tensors)
      if (!t.shape.empty() && t.shape.size() == t.type.shape.size()) {
        add(t.name_range, std::string("tensor<") + spelling(t.type.elem) + ">" + shape_str(t.shape));
        add(t.name_range, "layout: row-major in global memory");
      }
    for (const ScalarDecl &s : k.scalars)
      add(s.name_range, std::string(spelling(s.elem)) + " scalar, bound at run time");
    for (const EventDecl &e : k.events)
      if (!e.sym_shape.empty())
        add(e.name_range, "shape " + shape_str(e.sym_shape));
    for (const TaskDecl &t : k.tasks)
      task(t);
  }

  const TileFunc *func(const std::string &task) const {
    if (!tiles_)
      return nullptr;
    for (const TileFunc &f : tiles_->funcs)
      if (f.name == task)
        return &f;
    return nullptr;
  }

  void task(const TaskDecl &t) {
    const TileFunc *f = func(t.name);
    walk_body(
        t.body,
        [&](const Stmt &s) {
          if (s.kind != StmtKind::Let && s.kind != StmtKind::Var)
            return;
          if (s.local_index < 0 || size_t(s.local_index) >= t.locals.size())
            return;
          const LocalVar &v = t.locals[size_t(s.local_index)];
          std::string ty = type_str(v.type);
          if (v.type.kind == TypeKind::Index && v.sym)
            ty += " = " + v.sym->str();
          if (v.type.kind != TypeKind::Tile) {
            add(s.name_range, ty);
            return;
          }
          std::string layout = "layout: chosen at lowering";
          if (f && s.value && s.name_range.valid()) {
            const std::string &path = sm_.path(s.name_range.begin.file);
            if (const TOp *op = op_at(f->body, *f, path, sm_, s.value->range)) {
              const Layout &l = f->layouts[size_t(f->values[size_t(op->results[0])].layout)];
              layout = "layout: " + (l.origin.empty() ? "" : l.origin + ", ") + l.str();
            }
          }
          add(s.name_range, ty + "\n" + layout);
        },
        [](const Expr &) {});
  }
};

/// The table row of `name`, or null.
const BuiltinRow *builtin_row(const std::string &name) {
  for (const BuiltinRow &b : kBuiltins)
    if (name == b.name)
      return &b;
  return nullptr;
}

} // namespace

std::string builtin_doc(const std::string &builtin) {
  if (builtin == "inf")
    return "inf: positive infinity (a float scalar; -inf for max's identity)";
  const BuiltinRow *b = builtin_row(builtin);
  return b ? b->what : "";
}

std::vector<std::string> builtin_keywords(const std::string &builtin) {
  std::vector<std::string> r;
  const BuiltinRow *b = builtin_row(builtin);
  if (!b)
    return r;
  // `NAME=` or `NAME =` inside the signature's parentheses.
  std::string what = b->what;
  size_t open = what.find('('), close = what.find(')');
  if (open == std::string::npos || close == std::string::npos)
    return r;
  std::string sig = what.substr(open, close - open);
  for (size_t eq = sig.find('='); eq != std::string::npos; eq = sig.find('=', eq + 1)) {
    size_t e = eq;
    while (e > 0 && sig[e - 1] == ' ')
      --e;
    size_t s = e;
    while (s > 0 && (std::isalnum(static_cast<unsigned char>(sig[s - 1])) || sig[s - 1] == '_'))
      --s;
    if (s < e && std::find(r.begin(), r.end(), sig.substr(s, e - s)) == r.end())
      r.push_back(sig.substr(s, e - s));
  }
  return r;
}

void semantic_facts(const Compilation &c, const TileModule *tiles, Analysis &a) {
  if (c.program)
    Facts(c, tiles, a).run(*c.program);
}

std::string hover_text(const Analysis &a, uint32_t offset) {
  const Occurrence *o = a.at(offset);
  if (!o)
    return "";
  if (o->symbol < 0) {
    std::string doc = builtin_doc(o->builtin);
    return doc.empty() ? "" : "```etl\n" + o->builtin + "\n```\nbuiltin: " + doc;
  }
  const Symbol &s = a.symbols[size_t(o->symbol)];
  std::string r = "```etl\n" + (s.summary.empty() ? s.name : s.summary) + "\n```\n" +
                  symbol_word(s.kind);
  if (s.path != a.path && !s.path.empty())
    r += " from " + s.path;
  auto it = a.facts.find({s.path, s.decl.begin.offset});
  if (it != a.facts.end()) {
    bool several = it->second.size() > 1 && s.kind == SymbolKind::Local;
    for (size_t i = 0; i < it->second.size(); ++i) {
      r += "\n\n" + (several ? "call " + std::to_string(i + 1) + ": " : "");
      std::istringstream lines(it->second[i]);
      std::string line;
      for (bool first = true; std::getline(lines, line); first = false)
        r += (first ? "`" : "  \n`") + line + "`";
    }
  } else if (s.kind == SymbolKind::Local) {
    r += "\n\ntype unknown: the program does not check up to this name";
  }
  if (!s.doc.empty())
    r += "\n\n" + s.doc;
  return r;
}

} // namespace etl::lsp
