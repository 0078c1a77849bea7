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
kernel k<M: dim, N: dim>(x: tensor<f32>[M]) {
  event E[M];
  event D[1];
  task a[i in 0 .. M, j in 0 .. N] notifies E[i] {
    store(x[i .. +1], zeros<f32>[1]);
  }
  task b[i in 0 .. M] notifies E[i] {
    store(x[i .. +1], zeros<f32>[1]);
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
