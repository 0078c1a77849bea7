//===- ast/printer.cpp - The AST as stable text (--emit=ast) --------------===//
//
// print_ast writes the tree as indented S-expressions, one declaration or
// statement per line, expressions inline:
//
//   (Kernel rowsum @13:1
//     (Dim M @13:15)
//     (Param x @13:30 (Tensor f32 (Name M) (Name N)))
//     (Task partial @17:3
//       (Index i @17:16 (IntLit 0) (Call cdiv (Name M) (Name TM)))
//       (Notifies (E (Name i)))
//       (Let t @18:5 (Call load (Index (Name x) (Range (Name a) +(Name TM))))))
//
// Imports, consts and fns come before kernels:
//
//   (Import std.math @1:1)
//   (Fn silu @3:1 (Params x)
//     (Return @3:15 (Binary * (Name x) (Call sigmoid (Name x)))))
//
// Kind names come from ast/kinds.def. `@line:col` is where a declaration or
// statement starts. A `*` event index prints as `*`, a missing expression
// (only after syntax errors) as `<null>`. Golden tests compare this text, so
// keep it deterministic.
//
//===----------------------------------------------------------------------===//
#include "ast/ast.h"

#include <cstdio>
#include <cstdlib>

namespace etl {

namespace {

/// Shortest text that reads back as the same double.
std::string format_double(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos)
    s += ".0"; // keep floats visibly floats
  return s;
}

class Printer {
public:
  std::string program(const Program &p) {
    out_ += "(Program";
    for (const ImportDecl &i : p.imports) {
      line(1);
      out_ += std::string("(") + kind_name(DeclKind::Import) + " " + i.dotted() + at(i.range) + ")";
    }
    for (const ConstDecl &c : p.consts) {
      line(1);
      out_ += "(Const " + c.name + at(c.range) + " " + expr(c.value.get());
      if (c.tunable()) {
        out_ += " (In";
        for (const ExprPtr &e : c.candidates)
          out_ += " " + expr(e.get());
        out_ += ")";
      }
      for (const ExprPtr &e : c.where)
        out_ += " (Where " + expr(e.get()) + ")";
      out_ += ")";
    }
    for (const FnDecl &f : p.fns)
      fn(f);
    for (const KernelDecl &k : p.kernels)
      kernel(k);
    out_ += ")\n";
    return out_;
  }

private:
  void line(int depth) {
    out_ += "\n";
    out_.append(static_cast<size_t>(depth) * 2, ' ');
  }

  std::string at(const SourceRange &r) const {
    if (!r.valid())
      return "";
    return " @" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.col);
  }

  // (Fn silu @1:1 (Params x) ...body... (Return (Binary * ...)))
  void fn(const FnDecl &f) {
    line(1);
    out_ += std::string("(") + kind_name(DeclKind::Fn) + " " + f.name + at(f.range) + " (Params";
    for (const FnParam &p : f.params)
      out_ += " " + p.name;
    out_ += ")";
    for (const StmtPtr &s : f.body)
      stmt(s.get(), 2);
    if (f.ret) {
      line(2);
      out_ += std::string("(") + kind_name(DeclKind::Return) + at(f.ret_range) + " " +
              expr(f.ret.get()) + ")";
    }
    out_ += ")";
  }

  void kernel(const KernelDecl &k) {
    line(1);
    out_ += "(Kernel " + k.name + at(k.range);
    for (const DimDecl &d : k.dims) {
      line(2);
      out_ += "(Dim " + d.name + at(d.range) + ")";
    }
    for (size_t i = 0; i < k.tensors.size(); ++i) {
      const TensorDecl &t = k.tensors[i];
      line(2);
      out_ += std::string(t.is_buffer ? "(Buffer " : "(Param ") + t.name + at(t.range) + " " +
              tensor_type(t.type) + (t.zeros ? " zeros" : "") + ")";
    }
    for (const ScalarDecl &sc : k.scalars) {
      line(2);
      out_ += "(Scalar " + sc.name + at(sc.range) + " " + spelling(sc.elem) + ")";
    }
    for (const ExprPtr &w : k.where) {
      line(2);
      out_ += "(Where " + expr(w.get()) + ")";
    }
    if (k.schedule != ScheduleKind::None) {
      line(2);
      out_ += schedule(k.schedule);
    }
    for (const EventDecl &e : k.events) {
      line(2);
      out_ += "(Event " + e.name + at(e.range);
      for (const ExprPtr &s : e.shape)
        out_ += " " + expr(s.get());
      out_ += ")";
    }
    for (const TaskDecl &t : k.tasks)
      task(t);
    out_ += ")";
  }

  std::string tensor_type(const TensorType &t) const {
    std::string s = std::string("(Tensor ") + spelling(t.elem);
    for (const ExprPtr &e : t.shape)
      s += " " + expr(e.get());
    return s + ")";
  }

  void task(const TaskDecl &t) {
    line(2);
    out_ += "(Task " + t.name + at(t.range);
    for (const TaskIndexDecl &d : t.domain) {
      line(3);
      out_ +=
          "(Index " + d.name + at(d.range) + " " + expr(d.lo.get()) + " " + expr(d.hi.get()) + ")";
    }
    if (t.schedule != ScheduleKind::None) {
      line(3);
      out_ += schedule(t.schedule);
    }
    if (!t.waits.empty()) {
      line(3);
      out_ += "(Waits" + event_refs(t.waits) + ")";
    }
    if (!t.notifies.empty()) {
      line(3);
      out_ += "(Notifies" + event_refs(t.notifies) + ")";
    }
    for (const StmtPtr &s : t.body)
      stmt(s.get(), 3);
    out_ += ")";
  }

  static std::string schedule(ScheduleKind k) {
    return k == ScheduleKind::Dynamic ? "(Schedule dynamic)" : "(Schedule static)";
  }

  std::string event_refs(const std::vector<EventRef> &refs) const {
    std::string s;
    for (const EventRef &r : refs) {
      s += " (" + r.event;
      for (const ExprPtr &i : r.indices)
        s += " " + (i ? expr(i.get()) : std::string("*"));
      s += ")";
    }
    return s;
  }

  void stmt(const Stmt *s, int depth) {
    line(depth);
    out_ += std::string("(") + kind_name(s->kind);
    switch (s->kind) {
    case StmtKind::Let:
    case StmtKind::Var:
      out_ += " " + s->name + at(s->range) + " " + expr(s->value.get());
      break;
    case StmtKind::Assign:
      out_ += " " + s->name + " " +
              (s->compound ? std::string(spelling(s->assign_op)) + "=" : "=") + at(s->range) + " " +
              expr(s->value.get());
      break;
    case StmtKind::ExprStmt:
      out_ += at(s->range) + " " + expr(s->value.get());
      break;
    case StmtKind::For:
      out_ += " " + s->name + at(s->range) + " " + expr(s->lo.get()) + " " + expr(s->hi.get());
      if (s->step)
        out_ += " (step " + expr(s->step.get()) + ")";
      for (const StmtPtr &b : s->body)
        stmt(b.get(), depth + 1);
      break;
    case StmtKind::If:
      out_ += at(s->range) + " " + expr(s->value.get());
      for (const StmtPtr &b : s->body)
        stmt(b.get(), depth + 1);
      if (!s->else_body.empty()) {
        line(depth + 1);
        out_ += "(else";
        for (const StmtPtr &b : s->else_body)
          stmt(b.get(), depth + 2);
        out_ += ")";
      }
      break;
    }
    out_ += ")";
  }

  std::string expr(const Expr *e) const {
    if (!e)
      return "<null>";
    std::string s = std::string("(") + kind_name(e->kind);
    switch (e->kind) {
    case ExprKind::IntLit:
      s += " " + std::to_string(e->int_value);
      break;
    case ExprKind::FloatLit:
      s += " " + format_double(e->float_value);
      break;
    case ExprKind::Name:
      s += " " + e->name;
      break;
    case ExprKind::Unary:
      s += std::string(" ") + spelling(e->un_op);
      break;
    case ExprKind::Binary:
      s += std::string(" ") + spelling(e->bin_op);
      break;
    case ExprKind::Call:
      s += " " + e->name;
      if (e->type_arg)
        s += std::string(" <") + spelling(*e->type_arg) + ">";
      if (!e->shape_args.empty()) {
        s += " [";
        for (size_t i = 0; i < e->shape_args.size(); ++i)
          s += (i ? " " : "") + expr(e->shape_args[i].get());
        s += "]";
      }
      break;
    case ExprKind::Index:
    case ExprKind::Range:
      break;
    }
    for (size_t i = 0; i < e->args.size(); ++i) {
      s += " ";
      if (e->kind == ExprKind::Range && i == 1 && e->plus_extent)
        s += "+";
      s += expr(e->args[i].get());
    }
    for (const KwArg &k : e->kwargs)
      s += " (kw " + k.name + " " + expr(k.value.get()) + ")";
    return s + ")";
  }

  std::string out_;
};

} // namespace

std::string print_ast(const Program &p, const SourceManager &sm) {
  (void)sm; // locations are already resolved in the ranges
  return Printer().program(p);
}

} // namespace etl
