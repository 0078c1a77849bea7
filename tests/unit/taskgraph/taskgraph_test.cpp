// Unit tests for taskgraph/ and schedule/: wait counts, edges, group order.
#include "driver/pipeline.h"

#include <doctest/doctest.h>

#include <algorithm>

namespace etl {
namespace {

/// Runs the front half of the pipeline on `src`; fails the test on errors.
Compilation &front(Compilation &c, const std::string &src) {
  c.file = c.sm.add("test.etl", src);
  bool ok = compile_front(c);
  INFO(c.diag.render());
  REQUIRE(ok);
  return c;
}

const char *kRowsum = R"(
const TM = 16;
const TN = 128;
kernel rowsum<M: dim, N: dim>(x: tensor<f32>[M, N], y: tensor<f32>[M]) {
  buffer part: tensor<f32>[cdiv(N, TN), M];
  event E[cdiv(M, TM)];
  task partial[i in 0 .. cdiv(M, TM), j in 0 .. cdiv(N, TN)] notifies E[i] {
    let t = load(x[i * TM .. +TM, j * TN .. +TN]);
    store(part[j, i * TM .. +TM], sum(t, axis = 1));
  }
  task final[i in 0 .. cdiv(M, TM)] waits E[i] {
    var acc = zeros<f32>[TM];
    for j in 0 .. cdiv(N, TN) {
      acc += load(part[j, i * TM .. +TM]);
    }
    store(y[i * TM .. +TM], acc);
  }
}
)";

TEST_CASE("split-K row sum: each E[i] waits for cdiv(N, TN) partial tasks") {
  Compilation c;
  TaskGraph &g = front(c, kRowsum).graph;
  REQUIRE(g.events.size() == 1);
  REQUIRE(g.events[0].wait_count.has_value());
  CHECK(*g.events[0].wait_count == Sym::cdiv(Sym::symbol("N"), Sym(128)));
  CHECK(g.groups[0].task_count ==
        Sym::cdiv(Sym::symbol("M"), Sym(16)) * Sym::cdiv(Sym::symbol("N"), Sym(128)));
  CHECK(g.topo_order == std::vector<int>{0, 1});
  // Concrete values agree with counting by hand: M = 300, N = 1000.
  auto env = [](const std::string &s) -> std::optional<int64_t> {
    return s == "M" ? 300 : s == "N" ? 1000 : std::optional<int64_t>();
  };
  CHECK(g.events[0].wait_count->eval(env) == 8);
  CHECK(g.events[0].num_elements.eval(env) == 19);
}

TEST_CASE("a map that is not a plain task index leaves the count to the runtime") {
  Compilation c;
  TaskGraph &g = front(c, R"(
kernel k<M: dim>(x: tensor<f32>[M]) {
  event E[M];
  task a[i in 0 .. M] notifies E[M - 1 - i] {
    store(x[i .. +1], zeros<f32>[1]);
  }
  task b[i in 0 .. M] waits E[i] {
    store(x[i .. +1], zeros<f32>[1]);
  }
}
)")
                     .graph;
  CHECK_FALSE(g.events[0].wait_count.has_value());
  CHECK(g.events[0].wait_count_note.find("not a plain task index") != std::string::npos);
}

TEST_CASE("two producers add their counts; `*` waits span a whole dimension") {
  Compilation c;
  TaskGraph &g = front(c, R"(
kernel k<M: dim, N: dim>(x: tensor<f32>[M], xa: tensor<f32>[M], xb: tensor<f32>[M]) {
  event E[M];
  event D[1];
  task a[i in 0 .. M, j in 0 .. N] notifies E[i] {
    store(xa[i .. +1], zeros<f32>[1]);
  }
  task b[i in 0 .. M] notifies E[i] {
    store(xb[i .. +1], zeros<f32>[1]);
  }
  task c[i in 0 .. M] waits E[i] notifies D[0] {
    store(x[i .. +1], zeros<f32>[1]);
  }
  task d[k in 0 .. 1] waits E[*], D[k] {
    store(x[k .. +1], zeros<f32>[1]);
  }
}
)")
                     .graph;
  REQUIRE(g.events[0].wait_count.has_value());
  CHECK(*g.events[0].wait_count == Sym::symbol("N") + 1);
  // D[0] is notified by a constant index: not uniform over D (which has one element).
  CHECK(g.events[1].producers.size() == 1);
  CHECK(g.edges[g.groups[3].waits[0]].indices[0].star);
  // c and d come after a and b; d after c.
  auto pos = [&](int grp) {
    return std::find(g.topo_order.begin(), g.topo_order.end(), grp) - g.topo_order.begin();
  };
  CHECK(pos(0) < pos(2));
  CHECK(pos(1) < pos(2));
  CHECK(pos(2) < pos(3));
}

TEST_CASE("a cycle names every group and event on it") {
  Compilation c;
  c.file = c.sm.add("cycle.etl", R"(
kernel k<M: dim>(x: tensor<f32>[M]) {
  event E[M];
  event F[M];
  event G[M];
  task a[i in 0 .. M] waits G[i] notifies E[i] { store(x[i .. +1], zeros<f32>[1]); }
  task b[i in 0 .. M] waits E[i] notifies F[i] { store(x[i .. +1], zeros<f32>[1]); }
  task c[i in 0 .. M] waits F[i] notifies G[i] { store(x[i .. +1], zeros<f32>[1]); }
}
)");
  CHECK_FALSE(compile_front(c));
  std::string out = c.diag.render();
  CHECK(out.find("cycle") != std::string::npos);
  for (const char *name : {"'a'", "'b'", "'c'", "'E'", "'F'", "'G'"})
    CHECK(out.find(name) != std::string::npos);
}

TEST_CASE("dumps are deterministic and mention every group") {
  Compilation c;
  TaskGraph &g = front(c, kRowsum).graph;
  std::string text = print_task_graph(g), dot = print_dot(g);
  CHECK(text == print_task_graph(g));
  CHECK(text.find("wait count: cdiv(N, 128) per element") != std::string::npos);
  CHECK(dot.find("digraph") == 0);
  CHECK(dot.find("\"task:partial\" -> \"event:E\"") != std::string::npos);
  CHECK(dot.find("\"event:E\" -> \"task:final\"") != std::string::npos);
}

TEST_CASE("argument-block slots: dims, then tensors, then events") {
  Compilation c;
  front(c, kRowsum);
  ArgLayout l = arg_layout(c.program->kernels[0]);
  CHECK(l.dim(0) == 8);
  CHECK(l.dim(1) == 9);
  CHECK(l.tensor(0) == 10); // x
  CHECK(l.tensor(2) == 12); // part (a buffer, after the parameters)
  CHECK(l.event(0) == 13);
  CHECK(l.num_slots() == 14);
}

} // namespace
} // namespace etl

namespace etl {
namespace {

const char *kInverse = R"(
kernel inv<N: dim>(x: tensor<f32>[8 * N + 8], yp: tensor<f32>[8 * N + 8],
           yq: tensor<f32>[N], ys: tensor<f32>[N], yt: tensor<f32>[2 * N]) where N >= 2 schedule dynamic {
  event P[8 * N + 8];
  event Q[N, 4];
  task p[i in 0 .. 8 * N + 8] schedule static notifies P[i] {
    store(yp[i .. +1], load(x[i .. +1]));
  }
  task q[a in 0 .. N, b in 0 .. 4] notifies Q[a, b] {
    store(yq[a .. +1], load(x[a .. +1]));
  }
  task s[i in 0 .. N, j in 0 .. 2] waits P[3 * i + N + 1], P[i + j], Q[i, *], Q[j, 2 * j + 1] {
    store(ys[i .. +1], load(x[i .. +1]));
  }
  task t[i in 0 .. 2 * N] waits P[2 * i - i], P[4] {
    store(yt[i .. +1], load(x[i .. +1]));
  }
}
)";

TEST_CASE("schedule kinds: declared on the task, on the kernel, and the default") {
  Compilation c;
  TaskGraph &g = front(c, kInverse).graph;
  REQUIRE(g.groups.size() == 4);
  CHECK(!g.groups[0].dynamic);
  CHECK(g.groups[0].schedule_reason == "declared");
  CHECK(g.groups[1].dynamic);
  CHECK(g.groups[1].schedule_reason == "declared on kernel inv");
  Compilation d;
  TaskGraph &h = front(d, kRowsum).graph;
  CHECK(!h.groups[0].dynamic);
  CHECK(h.groups[0].schedule_reason == "default");
}

TEST_CASE("inverse of waits edges: affine components solve, others enumerate") {
  Compilation c;
  TaskGraph &g = front(c, kInverse).graph;
  const TaskGroup &s = g.groups[2];
  REQUIRE(s.waits.size() == 4);
  // P[3*i + N + 1]: i = (e - N - 1) / 3; j enumerated
  const EdgeInverse &a = g.edges[size_t(s.waits[0])].inverse;
  CHECK(a.solved_by == std::vector<int>{0, -1});
  CHECK(a.coeff[0] == 3);
  CHECK(a.unsolving == std::vector<bool>{false});
  // P[i + j]: neither variable has a rest free of the other
  const EdgeInverse &b = g.edges[size_t(s.waits[1])].inverse;
  CHECK(b.solved_by == std::vector<int>{-1, -1});
  CHECK(b.unsolving == std::vector<bool>{true});
  // Q[i, *]: i from component 0, the star constrains nothing
  const EdgeInverse &q = g.edges[size_t(s.waits[2])].inverse;
  CHECK(q.solved_by == std::vector<int>{0, -1});
  CHECK(q.unsolving == std::vector<bool>{false, false});
  // Q[j, 2*j + 1]: j from component 0; component 1 solves nothing new
  const EdgeInverse &r = g.edges[size_t(s.waits[3])].inverse;
  CHECK(r.solved_by == std::vector<int>{-1, 0});
  CHECK(r.coeff[1] == 1);
  CHECK(r.unsolving == std::vector<bool>{false, true});
  // t: P[2*i - i] normalises to i; P[4] is a constant component
  const TaskGroup &t = g.groups[3];
  CHECK(g.edges[size_t(t.waits[0])].inverse.solved_by == std::vector<int>{0});
  CHECK(g.edges[size_t(t.waits[0])].inverse.coeff[0] == 1);
  CHECK(g.edges[size_t(t.waits[1])].inverse.solved_by == std::vector<int>{-1});
  CHECK(g.edges[size_t(t.waits[1])].inverse.unsolving == std::vector<bool>{true});
  std::string dump = print_task_graph(g);
  CHECK(dump.find("consumers of P[i + j]: i enumerated over 0 .. N; j enumerated over 0 .. 2; "
                  "component 0 not invertible, checked per task") != std::string::npos);
}

} // namespace
} // namespace etl
