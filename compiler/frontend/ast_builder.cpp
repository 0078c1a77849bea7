//===- frontend/ast_builder.cpp - ANTLR parse tree to AST -----------------===//
//
// One method per grammar rule (the rule is quoted above each), turning the
// generated parser's contexts into the nodes of ast/ast.h with their source
// ranges. After a syntax error the tree may miss children or hold tokens the
// parser conjured up; every method tolerates that, so a partial Program is
// always returned (sema only runs on files without errors).
//
//===----------------------------------------------------------------------===//
#include "frontend/ast_builder.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <typeinfo>

namespace etl::frontend {

namespace {

using P = grammar::ETLParser;

/// `ctx` as the labelled alternative T (a generated leaf class), or null.
/// One address comparison: the grammar library is linked statically, so
/// each context class has one type_info. dynamic_cast compared type names
/// with strcmp on every miss, and libFuzzer hooks every strcmp: that was a
/// third of the front-end fuzzer's time.
template <class T, class C> T *alt(C *ctx) {
  return ctx && &typeid(*ctx) == &typeid(T) ? static_cast<T *>(ctx) : nullptr;
}

class AstBuilder {
public:
  AstBuilder(FileId f, const SourceManager &sm, Diag &d) : file_(f), sm_(sm), diag_(d) {}

  // program : topDecl* EOF ;
  // topDecl : constDecl | kernelDecl | fnDecl | importDecl ;
  std::unique_ptr<Program> program(P::ProgramContext *ctx) {
    auto p = std::make_unique<Program>();
    p->file = file_;
    if (!ctx)
      return p;
    for (P::TopDeclContext *top : ctx->topDecl()) {
      if (auto *c = top->constDecl())
        p->consts.push_back(constDecl(c));
      else if (auto *k = top->kernelDecl())
        p->kernels.push_back(kernelDecl(k));
      else if (auto *f = top->fnDecl())
        p->fns.push_back(fnDecl(f));
      else if (auto *i = top->importDecl())
        importDecl(i, p->imports);
    }
    return p;
  }

private:
  //===-- Ranges and tokens ----------------------------------------------===//

  /// A token the parser actually read (not one conjured by recovery).
  static bool real(antlr4::Token *t) {
    return t && t->getTokenIndex() != INVALID_INDEX && t->getStartIndex() != INVALID_INDEX &&
           t->getType() != antlr4::Token::EOF;
  }
  static bool real(antlr4::tree::TerminalNode *n) { return n && real(n->getSymbol()); }

  SourceRange token_range(antlr4::Token *t) const {
    if (!real(t))
      return {};
    return {sm_.loc(file_, static_cast<uint32_t>(t->getStartIndex())),
            sm_.loc(file_, static_cast<uint32_t>(t->getStopIndex() + 1))};
  }
  SourceRange range(antlr4::tree::TerminalNode *n) const {
    return n ? token_range(n->getSymbol()) : SourceRange{};
  }
  /// From the first to the last token of a rule; empty rules get a
  /// zero-width range at their start.
  SourceRange range(antlr4::ParserRuleContext *ctx) const {
    if (!ctx || !ctx->getStart() || ctx->getStart()->getStartIndex() == INVALID_INDEX)
      return {};
    antlr4::Token *a = ctx->getStart(), *b = ctx->getStop();
    SourceRange r;
    r.begin = sm_.loc(file_, static_cast<uint32_t>(a->getStartIndex()));
    if (b && b->getStopIndex() != INVALID_INDEX && b->getTokenIndex() >= a->getTokenIndex() &&
        b->getType() != antlr4::Token::EOF)
      r.end = sm_.loc(file_, static_cast<uint32_t>(b->getStopIndex() + 1));
    else
      r.end = r.begin;
    return r;
  }
  static std::string text(antlr4::tree::TerminalNode *n) { return real(n) ? n->getText() : ""; }
  /// An element type name (`f32`); reports UnknownElemType.
  std::optional<ElemType> elem_type(antlr4::tree::TerminalNode *n) {
    if (!real(n))
      return std::nullopt;
    std::optional<ElemType> t = parse_elem_type(n->getText());
    if (!t)
      diag_.error(DiagId::UnknownElemType, range(n), {n->getText()});
    return t;
  }

  //===-- Declarations ---------------------------------------------------===//

  // constDecl : 'const' IDENT '=' expr tunableCandidates? ';' ;
  // tunableCandidates : 'in' '[' exprList ']' whereClause? ;
  ConstDecl constDecl(P::ConstDeclContext *ctx) {
    ConstDecl c;
    c.name = text(ctx->IDENT());
    c.name_range = range(ctx->IDENT());
    c.value = expr(ctx->expr());
    c.range = range(ctx);
    if (auto *t = ctx->tunableCandidates()) {
      if (auto *l = t->exprList())
        for (P::ExprContext *e : l->expr())
          if (ExprPtr x = expr(e))
            c.candidates.push_back(std::move(x));
      if (auto *w = t->whereClause())
        whereClause(w, c.where);
    }
    return c;
  }

  // importDecl : 'import' IDENT ('.' IDENT)* ';' ;
  void importDecl(P::ImportDeclContext *ctx, std::vector<ImportDecl> &out) {
    ImportDecl d;
    for (antlr4::tree::TerminalNode *n : ctx->IDENT())
      if (real(n))
        d.path.push_back(n->getText());
    d.range = range(ctx);
    if (!d.path.empty())
      out.push_back(std::move(d));
  }

  // fnDecl : 'fn' IDENT '(' (fnParam (',' fnParam)*)? ')' block ;
  // fnParam : IDENT ;
  // The body's last statement must be `return expr;` (FnDecl::ret); a
  // `return` anywhere else is reported (ReturnNotLast), a missing one later
  // by compiler/inline (MissingReturn), which knows whether the fn is used.
  FnDecl fnDecl(P::FnDeclContext *ctx) {
    FnDecl f;
    f.name = text(ctx->IDENT());
    f.name_range = range(ctx->IDENT());
    f.range = range(ctx);
    for (P::FnParamContext *p : ctx->fnParam())
      if (real(p->IDENT()))
        f.params.push_back(FnParam{p->IDENT()->getText(), range(p->IDENT())});
    if (!ctx->block())
      return f;
    const std::string *saved = fn_name_;
    fn_name_ = &f.name;
    std::vector<P::StmtContext *> stmts = ctx->block()->stmt();
    for (size_t i = 0; i < stmts.size(); ++i) {
      auto *ret = alt<P::ReturnStmtContext>(stmts[i]);
      if (ret && i + 1 == stmts.size()) {
        f.ret = expr(ret->expr());
        f.ret_range = range(ret);
      } else if (StmtPtr st = stmt(stmts[i])) {
        f.body.push_back(std::move(st));
      }
    }
    fn_name_ = saved;
    return f;
  }

  // kernelDecl : 'kernel' IDENT dimParams? '(' (param (',' param)*)? ')'
  //              whereClause? '{' kernelItem* '}' ;
  // kernelItem : bufferDecl | eventDecl | taskDecl ;
  KernelDecl kernelDecl(P::KernelDeclContext *ctx) {
    KernelDecl k;
    k.name = text(ctx->IDENT());
    k.name_range = range(ctx->IDENT());
    k.range = range(ctx);
    if (auto *d = ctx->dimParams())
      dimParams(d, k.dims);
    for (P::ParamContext *p : ctx->param()) {
      if (p->scalarType())
        k.scalars.push_back(scalarParam(p));
      else
        k.tensors.push_back(param(p));
    }
    k.num_params = static_cast<int>(k.tensors.size());
    if (auto *w = ctx->whereClause())
      whereClause(w, k.where);
    if (auto *sc = ctx->scheduleClause()) {
      k.schedule = scheduleClause(sc);
      k.schedule_range = range(sc);
    }
    for (P::KernelItemContext *item : ctx->kernelItem()) {
      if (auto *b = item->bufferDecl())
        k.tensors.push_back(bufferDecl(b));
      else if (auto *e = item->eventDecl())
        k.events.push_back(eventDecl(e));
      else if (auto *t = item->taskDecl())
        k.tasks.push_back(taskDecl(t));
    }
    return k;
  }

  // dimParams : '<' dimParam (',' dimParam)* '>' ;
  // dimParam : IDENT ':' 'dim' ;
  void dimParams(P::DimParamsContext *ctx, std::vector<DimDecl> &out) {
    for (P::DimParamContext *d : ctx->dimParam()) {
      if (!real(d->IDENT()))
        continue;
      DimDecl dim;
      dim.name = text(d->IDENT());
      dim.range = range(d);
      out.push_back(std::move(dim));
    }
  }

  // param : IDENT ':' (tensorType | scalarType) initializer? ;
  // An initializer is refused: a parameter's contents are the caller's.
  void refuseParamInit(P::ParamContext *ctx) {
    if (auto *init = ctx->initializer(); init && real(ctx->IDENT()))
      diag_.error(DiagId::ParamInitializer, range(init), {text(ctx->IDENT())});
  }

  // param : IDENT ':' tensorType ;
  TensorDecl param(P::ParamContext *ctx) {
    refuseParamInit(ctx);
    TensorDecl t;
    t.name = text(ctx->IDENT());
    t.name_range = range(ctx->IDENT());
    if (ctx->tensorType())
      t.type = tensorType(ctx->tensorType());
    t.range = range(ctx);
    return t;
  }

  // param : IDENT ':' scalarType ;  scalarType : IDENT ;
  ScalarDecl scalarParam(P::ParamContext *ctx) {
    refuseParamInit(ctx);
    ScalarDecl s;
    s.name = text(ctx->IDENT());
    s.name_range = range(ctx->IDENT());
    s.elem = elem_type(ctx->scalarType()->IDENT()).value_or(ElemType::F32);
    s.elem_range = range(ctx->scalarType()->IDENT());
    s.range = range(ctx);
    return s;
  }

  // tensorType : 'tensor' '<' IDENT '>' '[' exprList? ']' ;
  TensorType tensorType(P::TensorTypeContext *ctx) {
    TensorType t;
    t.elem = elem_type(ctx->IDENT()).value_or(ElemType::F32);
    t.elem_range = range(ctx->IDENT());
    if (ctx->exprList())
      t.shape = exprList(ctx->exprList());
    t.range = range(ctx);
    return t;
  }

  // whereClause : 'where' expr (',' expr)* ;
  void whereClause(P::WhereClauseContext *ctx, std::vector<ExprPtr> &out) {
    for (P::ExprContext *e : ctx->expr())
      if (ExprPtr x = expr(e))
        out.push_back(std::move(x));
  }

  // scheduleClause : 'schedule' IDENT ;  (IDENT: static | dynamic)
  ScheduleKind scheduleClause(P::ScheduleClauseContext *ctx) {
    std::string w = text(ctx->IDENT());
    if (w == "static")
      return ScheduleKind::Static;
    if (w == "dynamic")
      return ScheduleKind::Dynamic;
    if (real(ctx->IDENT())) {
      diag_.error(DiagId::UnknownScheduleKind, range(ctx->IDENT()), {w});
      // Suggest the closer word by shared prefix/letters.
      size_t ds = 0, dd = 0;
      for (char c : w) {
        ds += std::string("static").find(c) != std::string::npos;
        dd += std::string("dynamic").find(c) != std::string::npos;
      }
      diag_.note(DiagId::NoteDidYouMean, range(ctx->IDENT()), {dd > ds ? "dynamic" : "static"});
    }
    return ScheduleKind::None;
  }

  // bufferDecl : 'buffer' IDENT ':' tensorType initializer? ';' ;
  // initializer : '=' expr ;  (only the name `zeros`)
  TensorDecl bufferDecl(P::BufferDeclContext *ctx) {
    TensorDecl t;
    t.name = text(ctx->IDENT());
    t.name_range = range(ctx->IDENT());
    if (ctx->tensorType())
      t.type = tensorType(ctx->tensorType());
    t.is_buffer = true;
    if (auto *init = ctx->initializer(); init && init->expr()) {
      std::string w = init->expr()->getText();
      if (w == "zeros")
        t.zeros = true;
      else if (!w.empty())
        diag_.error(DiagId::UnknownBufferInit, range(init->expr()), {w});
    }
    t.range = range(ctx);
    return t;
  }

  // eventDecl : 'event' IDENT '[' exprList? ']' ';' ;
  EventDecl eventDecl(P::EventDeclContext *ctx) {
    EventDecl e;
    e.name = text(ctx->IDENT());
    e.name_range = range(ctx->IDENT());
    if (ctx->exprList())
      e.shape = exprList(ctx->exprList());
    e.range = range(ctx);
    return e;
  }

  // taskDecl : 'task' IDENT '[' domainIndex (',' domainIndex)* ']'
  //            waitsClause? notifiesClause? block ;
  // waitsClause : 'waits' eventRef (',' eventRef)* ;
  // notifiesClause : 'notifies' eventRef (',' eventRef)* ;
  TaskDecl taskDecl(P::TaskDeclContext *ctx) {
    TaskDecl t;
    t.name = text(ctx->IDENT());
    t.name_range = range(ctx->IDENT());
    for (P::DomainIndexContext *d : ctx->domainIndex())
      t.domain.push_back(domainIndex(d));
    if (auto *sc = ctx->scheduleClause()) {
      t.schedule = scheduleClause(sc);
      t.schedule_range = range(sc);
    }
    if (auto *w = ctx->waitsClause())
      for (P::EventRefContext *e : w->eventRef())
        t.waits.push_back(eventRef(e));
    if (auto *n = ctx->notifiesClause())
      for (P::EventRefContext *e : n->eventRef())
        t.notifies.push_back(eventRef(e));
    if (ctx->block())
      t.body = block(ctx->block());
    t.range = range(ctx);
    return t;
  }

  // domainIndex : IDENT 'in' expr '..' expr ;
  TaskIndexDecl domainIndex(P::DomainIndexContext *ctx) {
    TaskIndexDecl d;
    d.name = text(ctx->IDENT());
    d.name_range = range(ctx->IDENT());
    std::vector<P::ExprContext *> es = ctx->expr();
    d.lo = es.size() > 0 ? expr(es[0]) : nullptr;
    d.hi = es.size() > 1 ? expr(es[1]) : nullptr;
    d.range = range(ctx);
    return d;
  }

  // eventRef : IDENT '[' (eventIndex (',' eventIndex)*)? ']' ;
  // eventIndex : '*' | expr ;
  EventRef eventRef(P::EventRefContext *ctx) {
    EventRef r;
    r.event = text(ctx->IDENT());
    r.event_range = range(ctx->IDENT());
    for (P::EventIndexContext *i : ctx->eventIndex())
      r.indices.push_back(i->expr() ? expr(i->expr()) : nullptr); // null: `*`
    r.range = range(ctx);
    return r;
  }

  //===-- Statements -----------------------------------------------------===//

  // block : '{' stmt* '}' ;
  std::vector<StmtPtr> block(P::BlockContext *ctx) {
    std::vector<StmtPtr> body;
    for (P::StmtContext *s : ctx->stmt())
      if (StmtPtr st = stmt(s))
        body.push_back(std::move(st));
    return body;
  }

  // stmt : 'let' IDENT '=' expr ';'                                # letStmt
  //      | 'var' IDENT '=' expr ';'                                # varStmt
  //      | IDENT op=('=' | '+=' | '-=' | '*=' | '/=') expr ';'     # assignStmt
  //      | 'for' IDENT 'in' expr '..' expr ('step' expr)? block    # forStmt
  //      | 'return' expr ';'                                       # returnStmt
  //      | expr ';'                                                # exprStmt
  StmtPtr stmt(P::StmtContext *ctx) {
    if (auto *c = alt<P::LetStmtContext>(ctx))
      return binding(StmtKind::Let, ctx, c->IDENT(), c->expr());
    if (auto *c = alt<P::VarStmtContext>(ctx))
      return binding(StmtKind::Var, ctx, c->IDENT(), c->expr());
    if (auto *c = alt<P::AssignStmtContext>(ctx)) {
      StmtPtr s = binding(StmtKind::Assign, ctx, c->IDENT(), c->expr());
      std::string op = c->op ? c->op->getText() : "=";
      s->compound = op != "=";
      if (op == "+=")
        s->assign_op = BinOp::Add;
      else if (op == "-=")
        s->assign_op = BinOp::Sub;
      else if (op == "*=")
        s->assign_op = BinOp::Mul;
      else if (op == "/=")
        s->assign_op = BinOp::Div;
      return s;
    }
    if (auto *c = alt<P::ForStmtContext>(ctx))
      return forStmt(c);
    if (auto *c = alt<P::IfStmtContext>(ctx))
      return ifChain(c->ifChain());
    if (alt<P::ReturnStmtContext>(ctx)) {
      if (fn_name_)
        diag_.error(DiagId::ReturnNotLast, range(ctx), {*fn_name_});
      else
        diag_.error(DiagId::ReturnOutsideFn, range(ctx));
      return nullptr;
    }
    if (auto *c = alt<P::ExprStmtContext>(ctx)) {
      auto s = std::make_unique<Stmt>(StmtKind::ExprStmt, range(ctx));
      s->value = expr(c->expr());
      return s;
    }
    return nullptr; // a statement recovery gave up on
  }

  /// let/var/assign: `NAME op expr ;`
  StmtPtr binding(StmtKind k, P::StmtContext *ctx, antlr4::tree::TerminalNode *name,
                  P::ExprContext *value) {
    auto s = std::make_unique<Stmt>(k, range(ctx));
    s->name = text(name);
    s->name_range = range(name);
    s->value = expr(value);
    return s;
  }

  // forStmt : 'for' IDENT 'in' expr '..' expr ('step' expr)? block
  StmtPtr forStmt(P::ForStmtContext *ctx) {
    auto s = std::make_unique<Stmt>(StmtKind::For, range(ctx));
    s->name = text(ctx->IDENT());
    s->name_range = range(ctx->IDENT());
    std::vector<P::ExprContext *> es = ctx->expr();
    s->lo = es.size() > 0 ? expr(es[0]) : nullptr;
    s->hi = es.size() > 1 ? expr(es[1]) : nullptr;
    s->step = es.size() > 2 ? expr(es[2]) : nullptr;
    if (ctx->block())
      s->body = block(ctx->block());
    return s;
  }

  // ifChain : 'if' expr block ('else' (block | ifChain))?
  StmtPtr ifChain(P::IfChainContext *ctx) {
    if (!ctx)
      return nullptr;
    auto s = std::make_unique<Stmt>(StmtKind::If, range(ctx));
    s->value = expr(ctx->expr());
    std::vector<P::BlockContext *> bs = ctx->block();
    if (!bs.empty() && bs[0])
      s->body = block(bs[0]);
    if (bs.size() > 1 && bs[1])
      s->else_body = block(bs[1]);
    if (ctx->ifChain())
      if (StmtPtr e = ifChain(ctx->ifChain()))
        s->else_body.push_back(std::move(e));
    return s;
  }

  //===-- Expressions ----------------------------------------------------===//

  // expr : primary                                  # primaryExpr
  //      | expr '[' sliceComp (',' sliceComp)* ']'  # indexExpr
  //      | op=('-' | '!') expr                      # unaryExpr
  //      | expr op=(...) expr                       # binaryExpr (by level)
  ExprPtr expr(P::ExprContext *ctx) {
    if (!ctx)
      return nullptr;
    // Deep trees (`1+1+...+1`, `----x`) would overflow the stack here and in
    // every later pass: refuse them once.
    struct Depth {
      int &d;
      explicit Depth(int &x) : d(x) { ++d; }
      ~Depth() { --d; }
    } depth(depth_);
    if (depth_ > kMaxExprDepth) {
      if (!too_deep_)
        diag_.error(DiagId::NestingTooDeep, range(ctx), {std::to_string(kMaxExprDepth)});
      too_deep_ = true;
      return nullptr;
    }
    if (auto *c = alt<P::PrimaryExprContext>(ctx))
      return primary(c->primary());
    if (auto *c = alt<P::IndexExprContext>(ctx)) {
      auto e = std::make_unique<Expr>(ExprKind::Index, range(ctx));
      e->args.push_back(expr(c->expr()));
      for (P::SliceCompContext *s : c->sliceComp())
        e->args.push_back(sliceComp(s));
      return e;
    }
    if (auto *c = alt<P::UnaryExprContext>(ctx)) {
      auto e = std::make_unique<Expr>(ExprKind::Unary, range(ctx));
      std::string op = c->op ? c->op->getText() : "-";
      e->un_op = op == "!" ? UnOp::Not : op == "~" ? UnOp::BitNot : UnOp::Neg;
      e->args.push_back(expr(c->expr()));
      return e;
    }
    if (auto *c = alt<P::BinaryExprContext>(ctx)) {
      auto e = std::make_unique<Expr>(ExprKind::Binary, range(ctx));
      e->bin_op = bin_op(c->op ? c->op->getText() : "+");
      std::vector<P::ExprContext *> es = c->expr();
      e->args.push_back(es.size() > 0 ? expr(es[0]) : nullptr);
      e->args.push_back(es.size() > 1 ? expr(es[1]) : nullptr);
      return e;
    }
    return nullptr;
  }

  static BinOp bin_op(const std::string &s) {
#define ETL_BINOP(K, SPELLING)                                                                     \
  if (s == SPELLING)                                                                               \
    return BinOp::K;
#include "ast/kinds.def"
    return BinOp::Add;
  }

  // primary : INT | FLOAT
  //         | IDENT '<' IDENT '>' '[' exprList? ']' ('(' callArgs? ')')?  # genericCall
  //         | IDENT '<' IDENT '>' '(' callArgs? ')'                       # genericCall
  //         | IDENT '(' callArgs? ')'                                     # call
  //         | IDENT                                                       # name
  //         | '(' expr ')'                                                # paren
  ExprPtr primary(P::PrimaryContext *ctx) {
    if (!ctx)
      return nullptr;
    if (auto *c = alt<P::IntLitContext>(ctx))
      return intLit(c);
    if (auto *c = alt<P::FloatLitContext>(ctx))
      return floatLit(c);
    if (auto *c = alt<P::NameContext>(ctx)) {
      if (!real(c->IDENT()))
        return nullptr;
      auto e = std::make_unique<Expr>(ExprKind::Name, range(ctx));
      e->name = text(c->IDENT());
      return e;
    }
    if (auto *c = alt<P::ParenContext>(ctx))
      return expr(c->expr());
    if (auto *c = alt<P::CallContext>(ctx)) {
      auto e = std::make_unique<Expr>(ExprKind::Call, range(ctx));
      e->name = text(c->IDENT());
      e->callee_range = range(c->IDENT());
      if (c->callArgs())
        callArgs(c->callArgs(), *e);
      return e;
    }
    if (auto *c = alt<P::GenericCallContext>(ctx)) {
      auto e = std::make_unique<Expr>(ExprKind::Call, range(ctx));
      e->name = text(c->IDENT(0));
      e->callee_range = range(c->IDENT(0));
      e->type_arg = elem_type(c->IDENT(1));
      if (c->exprList())
        e->shape_args = exprList(c->exprList());
      if (c->callArgs())
        callArgs(c->callArgs(), *e);
      return e;
    }
    return nullptr;
  }

  // INT : [0-9]+ ;
  ExprPtr intLit(P::IntLitContext *ctx) {
    auto e = std::make_unique<Expr>(ExprKind::IntLit, range(ctx));
    std::string s = text(ctx->INT());
    uint64_t v = 0;
    const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    for (char ch : s) {
      unsigned d = static_cast<unsigned>(ch - '0');
      if (v > (max - d) / 10) {
        diag_.error(DiagId::IntLiteralOverflow, range(ctx), {s});
        v = 0;
        break;
      }
      v = v * 10 + d;
    }
    e->int_value = static_cast<int64_t>(v);
    return e;
  }

  // FLOAT : [0-9]+ '.' [0-9]+ EXPONENT? | [0-9]+ EXPONENT ;
  ExprPtr floatLit(P::FloatLitContext *ctx) {
    auto e = std::make_unique<Expr>(ExprKind::FloatLit, range(ctx));
    std::string s = text(ctx->FLOAT());
    errno = 0;
    double v = std::strtod(s.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(v)) {
      diag_.error(DiagId::FloatLiteralOutOfRange, range(ctx), {s});
      v = 0;
    }
    e->float_value = v;
    return e;
  }

  // sliceComp : expr '..' '+' expr   # extentRange
  //           | expr '..' expr       # boundsRange
  //           | expr                 # plainIndex
  ExprPtr sliceComp(P::SliceCompContext *ctx) {
    if (auto *c = alt<P::PlainIndexContext>(ctx))
      return expr(c->expr());
    std::vector<P::ExprContext *> es;
    bool plus = false;
    if (auto *c = alt<P::ExtentRangeContext>(ctx)) {
      es = c->expr();
      plus = true;
    } else if (auto *c = alt<P::BoundsRangeContext>(ctx)) {
      es = c->expr();
    } else {
      return nullptr;
    }
    auto e = std::make_unique<Expr>(ExprKind::Range, range(ctx));
    e->plus_extent = plus;
    e->args.push_back(es.size() > 0 ? expr(es[0]) : nullptr);
    e->args.push_back(es.size() > 1 ? expr(es[1]) : nullptr);
    return e;
  }

  // exprList : expr (',' expr)* ;
  std::vector<ExprPtr> exprList(P::ExprListContext *ctx) {
    std::vector<ExprPtr> out;
    for (P::ExprContext *e : ctx->expr())
      if (ExprPtr x = expr(e))
        out.push_back(std::move(x));
    return out;
  }

  // callArgs : callArg (',' callArg)* ;
  // callArg : IDENT '=' expr   # kwArg
  //         | expr             # posArg
  void callArgs(P::CallArgsContext *ctx, Expr &call) {
    for (P::CallArgContext *a : ctx->callArg()) {
      if (auto *kw = alt<P::KwArgContext>(a)) {
        KwArg k;
        k.name = text(kw->IDENT());
        k.name_range = range(kw->IDENT());
        k.value = expr(kw->expr());
        call.kwargs.push_back(std::move(k));
      } else if (auto *pos = alt<P::PosArgContext>(a)) {
        if (ExprPtr x = expr(pos->expr()))
          call.args.push_back(std::move(x));
      }
    }
  }

  static constexpr int kMaxExprDepth = 256;

  FileId file_;
  const SourceManager &sm_;
  Diag &diag_;
  int depth_ = 0;
  bool too_deep_ = false;
  const std::string *fn_name_ = nullptr; ///< the fn whose body is being built
};

} // namespace

std::unique_ptr<Program> build_ast(grammar::ETLParser::ProgramContext *tree, FileId file,
                                   const SourceManager &sm, Diag &diag) {
  return AstBuilder(file, sm, diag).program(tree);
}

} // namespace etl::frontend
