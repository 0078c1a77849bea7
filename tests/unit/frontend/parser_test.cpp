//===- tests/unit/frontend/parser_test.cpp - Parsing into the AST ---------===//
#include "ast/ast.h"
#include "frontend/parser.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using namespace etl;

namespace {

struct Parsed {
  SourceManager sm;
  std::unique_ptr<Diag> diag;
  std::unique_ptr<Program> prog;
  std::string errors() const { return diag->render(); }
};

std::unique_ptr<Parsed> parse(const std::string &text) {
  auto p = std::make_unique<Parsed>();
  FileId f = p->sm.add("t.etl", text);
  p->diag = std::make_unique<Diag>(p->sm);
  p->prog = parse_program(f, p->sm, *p->diag);
  return p;
}

std::string read(const std::string &rel) {
  std::ifstream in(std::string(ETL_SOURCE_DIR) + "/" + rel);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The source text a range covers.
std::string text_of(const Parsed &p, SourceRange r) {
  return p.sm.text(r.begin.file).substr(r.begin.offset, r.end.offset - r.begin.offset);
}

const char *kKernel = "kernel k<M: dim>(x: tensor<f32>[M]) {\n"
                      "  task t[i in 0 .. M] {\n"
                      "    %s\n"
                      "  }\n"
                      "}\n";

/// Parses `stmt` inside a task body; returns the statement.
const Stmt *one_stmt(Parsed &p) {
  REQUIRE_MESSAGE(!p.diag->has_errors(), p.errors());
  REQUIRE(p.prog->kernels.size() == 1);
  REQUIRE(p.prog->kernels[0].tasks.size() == 1);
  REQUIRE(p.prog->kernels[0].tasks[0].body.size() == 1);
  return p.prog->kernels[0].tasks[0].body[0].get();
}

std::unique_ptr<Parsed> parse_stmt(const std::string &stmt) {
  std::string k = kKernel;
  k.replace(k.find("%s"), 2, stmt);
  return parse(k);
}

} // namespace

TEST_CASE("parser: the examples parse without errors") {
  for (const char *ex : {"examples/rowsum/rowsum.etl", "examples/softmax/softmax.etl"}) {
    std::string text = read(ex);
    REQUIRE(!text.empty());
    auto p = parse(text);
    INFO(ex);
    CHECK_MESSAGE(!p->diag->has_errors(), p->errors());
    CHECK(p->prog->consts.size() == 2);
    REQUIRE(p->prog->kernels.size() == 1);
    CHECK(p->prog->kernels[0].tasks.size() == 2);
  }
}

TEST_CASE("parser: `buffer ... = zeros` marks the buffer; a plain one is not") {
  auto p = parse(read("tests/unit/runtime/programs/zeros_accumulate.etl"));
  REQUIRE_MESSAGE(!p->diag->has_errors(), p->errors());
  const KernelDecl &k = p->prog->kernels[0];
  REQUIRE(k.tensors.size() == 5);
  CHECK(k.tensors[3].name == "acc");
  CHECK(k.tensors[3].zeros);
  CHECK(text_of(*p, k.tensors[3].range) == "buffer acc: tensor<f32>[M] = zeros;");
  CHECK(k.tensors[4].name == "raw");
  CHECK(k.tensors[4].is_buffer);
  CHECK(!k.tensors[4].zeros);
  CHECK(!k.tensors[0].zeros);
  std::string ast = print_ast(*p->prog, p->sm); // --emit=ast says so
  CHECK(ast.find("(Buffer acc") != std::string::npos);
  CHECK(ast.find("(Tensor f32 (Name M)) zeros)") != std::string::npos);
  CHECK(ast.find("(Buffer raw") != std::string::npos);
}

TEST_CASE("parser: rowsum structure and ranges") {
  auto p = parse(read("examples/rowsum/rowsum.etl"));
  REQUIRE(!p->diag->has_errors());
  const Program &prog = *p->prog;
  CHECK(prog.consts[0].name == "TM");
  CHECK(prog.consts[0].value->int_value == 16);
  CHECK(text_of(*p, prog.consts[0].range) == "const TM = 16;");
  CHECK(prog.consts[0].range.begin.line == 10);
  CHECK(prog.consts[0].range.begin.col == 1);
  const KernelDecl &k = prog.kernels[0];
  CHECK(k.name == "rowsum");
  CHECK(text_of(*p, k.name_range) == "rowsum");
  REQUIRE(k.dims.size() == 2);
  CHECK(k.dims[1].name == "N");
  CHECK(text_of(*p, k.dims[1].range) == "N: dim");
  CHECK(k.num_params == 2);
  REQUIRE(k.tensors.size() == 3);
  CHECK(k.tensors[2].is_buffer);
  CHECK(k.tensors[2].name == "part");
  CHECK(text_of(*p, k.tensors[0].type.range) == "tensor<f32>[M, N]");
  CHECK(text_of(*p, k.tensors[0].type.elem_range) == "f32");
  REQUIRE(k.events.size() == 1);
  CHECK(text_of(*p, k.events[0].range) == "event E[cdiv(M, TM)];");
  const TaskDecl &partial = k.tasks[0];
  REQUIRE(partial.domain.size() == 2);
  CHECK(text_of(*p, partial.domain[1].range) == "j in 0 .. cdiv(N, TN)");
  REQUIRE(partial.notifies.size() == 1);
  CHECK(partial.notifies[0].event == "E");
  CHECK(text_of(*p, partial.notifies[0].range) == "E[i]");
  REQUIRE(partial.body.size() == 2);
  const Stmt &let = *partial.body[0];
  CHECK(let.kind == StmtKind::Let);
  CHECK(text_of(*p, let.range) == "let t = load(x[i * TM .. +TM, j * TN .. +TN]);");
  const Expr &load = *let.value;
  CHECK(load.kind == ExprKind::Call);
  CHECK(load.name == "load");
  CHECK(text_of(*p, load.callee_range) == "load");
  const Expr &idx = *load.args[0];
  CHECK(idx.kind == ExprKind::Index);
  REQUIRE(idx.args.size() == 3);
  CHECK(idx.args[0]->name == "x");
  const Expr &r = *idx.args[1];
  CHECK(r.kind == ExprKind::Range);
  CHECK(r.plus_extent);
  CHECK(text_of(*p, r.range) == "i * TM .. +TM");
  CHECK(r.args[0]->bin_op == BinOp::Mul);
  CHECK(r.args[1]->name == "TM");
  const Expr &store = *partial.body[1]->value;
  CHECK(store.kwargs.empty());
  REQUIRE(store.args.size() == 2);
  REQUIRE(store.args[1]->kwargs.size() == 1);
  CHECK(store.args[1]->kwargs[0].name == "axis");
  CHECK(store.args[1]->kwargs[0].value->int_value == 1);
  const TaskDecl &fin = k.tasks[1];
  REQUIRE(fin.waits.size() == 1);
  const Stmt &var = *fin.body[0];
  CHECK(var.kind == StmtKind::Var);
  CHECK(var.value->type_arg == ElemType::F32);
  CHECK(var.value->shape_args.size() == 1);
  CHECK(var.value->args.empty());
  const Stmt &loop = *fin.body[1];
  CHECK(loop.kind == StmtKind::For);
  CHECK(loop.name == "j");
  CHECK(!loop.step);
  REQUIRE(loop.body.size() == 1);
  CHECK(loop.body[0]->kind == StmtKind::Assign);
  CHECK(loop.body[0]->compound);
  CHECK(loop.body[0]->assign_op == BinOp::Add);
  CHECK(loop.body[0]->range.begin.line == 25);
  CHECK(loop.body[0]->range.begin.col == 7);
}

TEST_CASE("parser: bit operators bind tighter than comparisons, shifts looser than +") {
  // a | b ^ c & d << e + f == g  is  (a | (b ^ (c & (d << (e + f))))) == g
  auto p = parse_stmt("let r = a | b ^ c & d << e + f == ~g;");
  const Expr &eq = *one_stmt(*p)->value;
  REQUIRE(eq.bin_op == BinOp::Eq);
  CHECK(eq.args[1]->kind == ExprKind::Unary);
  CHECK(eq.args[1]->un_op == UnOp::BitNot);
  const Expr &bor = *eq.args[0];
  REQUIRE(bor.bin_op == BinOp::BitOr);
  const Expr &bxor = *bor.args[1];
  REQUIRE(bxor.bin_op == BinOp::BitXor);
  const Expr &band = *bxor.args[1];
  REQUIRE(band.bin_op == BinOp::BitAnd);
  const Expr &shl = *band.args[1];
  REQUIRE(shl.bin_op == BinOp::Shl);
  CHECK(shl.args[1]->bin_op == BinOp::Add);
  // `>>` next to generic calls: `cast<i32>(x)>>2`, and `x >> y > z` is (x >> y) > z.
  auto q = parse_stmt("let r = cast<i32>(x)>>2 > zeros<i32>[4]>>1;");
  const Expr &gt = *one_stmt(*q)->value;
  REQUIRE(gt.bin_op == BinOp::Gt);
  CHECK(gt.args[0]->bin_op == BinOp::Shr);
  CHECK(gt.args[0]->args[0]->name == "cast");
  CHECK(gt.args[1]->bin_op == BinOp::Shr);
  CHECK(gt.args[1]->args[0]->name == "zeros");
}

TEST_CASE("parser: precedence") {
  auto p = parse_stmt("let a = -x + y * z < 3 || !b && c == d;");
  const Expr &e = *one_stmt(*p)->value;
  CHECK(e.bin_op == BinOp::Or);
  const Expr &lt = *e.args[0];
  CHECK(lt.bin_op == BinOp::Lt);
  const Expr &add = *lt.args[0];
  CHECK(add.bin_op == BinOp::Add);
  CHECK(add.args[0]->kind == ExprKind::Unary);
  CHECK(add.args[0]->un_op == UnOp::Neg);
  CHECK(add.args[1]->bin_op == BinOp::Mul);
  const Expr &andx = *e.args[1];
  CHECK(andx.bin_op == BinOp::And);
  CHECK(andx.args[0]->un_op == UnOp::Not);
  CHECK(andx.args[1]->bin_op == BinOp::Eq);
  // Left associativity.
  auto q = parse_stmt("let a = x - y - z;");
  const Expr &s = *one_stmt(*q)->value;
  CHECK(s.args[0]->bin_op == BinOp::Sub);
  CHECK(s.args[1]->name == "z");
  // Parentheses and unary over postfix.
  auto r = parse_stmt("let a = -(x + y)[0];");
  const Expr &u = *one_stmt(*r)->value;
  CHECK(u.kind == ExprKind::Unary);
  CHECK(u.args[0]->kind == ExprKind::Index);
}

TEST_CASE("parser: literals, generic calls, statements") {
  auto p = parse_stmt("let a = f(1.5, 2e-3, 1.0e5, 7);");
  const Expr &f = *one_stmt(*p)->value;
  REQUIRE(f.args.size() == 4);
  CHECK(f.args[0]->float_value == 1.5);
  CHECK(f.args[1]->float_value == doctest::Approx(2e-3));
  CHECK(f.args[2]->float_value == 1.0e5);
  CHECK(f.args[3]->kind == ExprKind::IntLit);

  auto g = parse_stmt("var m = full<f32>[4, 8](-inf);");
  const Expr &full = *one_stmt(*g)->value;
  CHECK(full.name == "full");
  CHECK(full.type_arg == ElemType::F32);
  CHECK(full.shape_args.size() == 2);
  REQUIRE(full.args.size() == 1);
  CHECK(full.args[0]->args[0]->name == "inf");

  auto c = parse_stmt("x = cast<f16>(y);");
  const Stmt *assign = one_stmt(*c);
  CHECK(assign->kind == StmtKind::Assign);
  CHECK(!assign->compound);
  CHECK(assign->value->type_arg == ElemType::F16);
  CHECK(assign->value->shape_args.empty());

  for (auto [src, op] : {std::pair{"x -= 1;", BinOp::Sub},
                         {"x *= 1;", BinOp::Mul},
                         {"x /= 1;", BinOp::Div},
                         {"x += 1;", BinOp::Add}}) {
    auto s = parse_stmt(src);
    CHECK(one_stmt(*s)->compound);
    CHECK(one_stmt(*s)->assign_op == op);
  }

  auto l = parse_stmt("for k in 0 .. M step 4 { store(x[k .. k + 4], y); }");
  const Stmt *loop = one_stmt(*l);
  REQUIRE(loop->step);
  CHECK(loop->step->int_value == 4);
  REQUIRE(loop->body.size() == 1);
  const Expr &slice = *loop->body[0]->value->args[0];
  CHECK(!slice.args[1]->plus_extent);
  CHECK(slice.args[1]->args[1]->bin_op == BinOp::Add);
}

TEST_CASE("parser: where, events with '*', waits and notifies lists") {
  auto p = parse("kernel k<M: dim, N: dim>(x: tensor<i32>[M, N]) where M % 4 == 0, N <= 64 {\n"
                 "  event E[M, N];\n"
                 "  event F[M];\n"
                 "  task t[i in 0 .. M, j in 0 .. N] waits E[i, *], F[*] notifies F[i] { }\n"
                 "}\n");
  REQUIRE_MESSAGE(!p->diag->has_errors(), p->errors());
  const KernelDecl &k = p->prog->kernels[0];
  CHECK(k.tensors[0].type.elem == ElemType::I32);
  REQUIRE(k.where.size() == 2);
  CHECK(k.where[1]->bin_op == BinOp::Le);
  const TaskDecl &t = k.tasks[0];
  REQUIRE(t.waits.size() == 2);
  REQUIRE(t.waits[0].indices.size() == 2);
  CHECK(t.waits[0].indices[0]);
  CHECK(!t.waits[0].indices[1]);
  CHECK(!t.waits[1].indices[0]);
  REQUIRE(t.notifies.size() == 1);
  CHECK(t.body.empty());
}

TEST_CASE("parser: comments, and ranges after non-ASCII text") {
  auto p = parse("/* é block\n comment */ const A = 1; // trailing ü\nconst B = 2;\n");
  REQUIRE_MESSAGE(!p->diag->has_errors(), p->errors());
  REQUIRE(p->prog->consts.size() == 2);
  CHECK(text_of(*p, p->prog->consts[0].range) == "const A = 1;");
  CHECK(p->prog->consts[0].range.begin.line == 2);
  CHECK(p->prog->consts[0].range.begin.col == 13);
  CHECK(text_of(*p, p->prog->consts[1].range) == "const B = 2;");
}

TEST_CASE("parser: errors") {
  auto p = parse("const A = 99999999999999999999;\nconst B = 9223372036854775807;\n");
  CHECK(p->diag->error_count() == 1);
  CHECK(p->diag->diagnostics()[0].id == DiagId::IntLiteralOverflow);
  CHECK(p->prog->consts[1].value->int_value == 9223372036854775807);

  auto q = parse("kernel k<M: dim>(x: tensor<f64>[M]) { }\n");
  REQUIRE(q->diag->error_count() == 1);
  CHECK(q->diag->diagnostics()[0].id == DiagId::UnknownElemType);
  CHECK(text_of(*q, q->diag->diagnostics()[0].range) == "f64");

  auto r = parse("const A = 1\nconst B = 2;\n");
  REQUIRE(r->diag->error_count() == 1);
  CHECK(r->diag->diagnostics()[0].message == "expected ';' after constant declaration");
  CHECK(r->diag->diagnostics()[0].range.begin.line == 1);
  CHECK(r->diag->diagnostics()[0].range.begin.col == 12);

  auto s = parse("const A = 1 $ 2;\n");
  REQUIRE(s->diag->error_count() >= 1);
  CHECK(s->diag->diagnostics()[0].id == DiagId::InvalidCharacter);

  auto e = parse("");
  CHECK(!e->diag->has_errors());
  CHECK(e->prog->kernels.empty());
}
