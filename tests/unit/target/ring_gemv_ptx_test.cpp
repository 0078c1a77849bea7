// The steady-state K loop of a GEMV written naively (scripts/kloop_gemv.etl:
// one task per column tile, a 64 x 128 bf16 weight tile and a 64-element x
// slice per step, `acc += sum(x * w, axis = 0)`) in the PTX for sm_80 and
// sm_90: tile/pipeline.cpp's plain rings stream both loads by cp.async three
// stages deep, tile/sums.cpp keeps the sums in registers until the loop
// ends. Between the prologue (two committed groups) and the drain after
// the loop (wait_group 0): the ring's wait_group 1, copies and one barrier;
// the weight tile read from shared memory in 16-byte vectors, never loaded
// into registers from global memory; no division for the ring slot (a
// counter that wraps); no shuffle and no argument-block load (the bounds
// and pointers stay in registers).
#include "driver/pipeline.h"
#include "ptx_cfg.h"
#include "ptx_programs.h"
#include "../skip.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>

using namespace etl;

namespace {

std::string ptx_of(const char *target, const char *file = "/scripts/kloop_gemv.etl") {
  CompileOptions o;
  o.input = std::string(ETL_SOURCE_DIR) + file;
  o.targets = {target};
  o.emit = "ptx";
  std::ostringstream out, err;
  int rc = compile(o, out, err);
  INFO(err.str());
  REQUIRE(rc == 0);
  return out.str();
}

/// The blocks of the K loop: the innermost natural loop around the ring's
/// `cp.async.wait_group 1`.
std::set<int> k_loop(const etl::ptxcheck::Kernel &k) {
  int wait = -1;
  for (size_t i = 0; i < k.insns.size(); ++i)
    if (k.insns[i].op == "cp.async.wait_group" && k.insns[i].operands.at(0) == "1")
      wait = int(i);
  REQUIRE(wait >= 0);
  std::set<int> loop;
  for (const std::set<int> &l : k.loops())
    if (l.count(k.insns[size_t(wait)].block) && (loop.empty() || l.size() < loop.size()))
      loop = l;
  REQUIRE(!loop.empty());
  return loop;
}

} // namespace

// The ring copies' steps (lower_tile_mma.cpp's ring_copy_bump, tile_for):
// each thread's first-chunk pointer is computed once before the loop and
// bumped by a loop-invariant stride (no 64-bit multiply in the loop); the
// steps whose tile lies inside the tensor are known before the loop, so
// the interior path is one block of unconditional cp.async (no bounds or
// alignment arithmetic between them: one compare of the loop variable
// chose it), each chunk's place in the slot at a constant offset from the
// first's; the ring read takes every vector at an immediate offset from
// one address. For the naive GEMV and gemm's mma.sync K loop (its rows not
// proven 16-byte aligned: tested once per copy before the loop).
TEST_CASE("ring copies: pointers bumped per step, bounds known before the loop") {
  using namespace etl::ptxcheck;
  for (const char *file : {"/scripts/kloop_gemv.etl", "/examples/gemm/gemm.etl"})
    for (const char *target : {"sm_80", "sm_90"}) {
      CAPTURE(file);
      CAPTURE(target);
      const Kernel k = parse_kernel(ptx_of(target, file));
      const std::set<int> loop = k_loop(k);
      int wide_mul = 0, interior_copies = 0;
      std::map<std::string, int> shared_bases;
      for (int bi : loop) {
        int copies = 0, arith = 0;
        for (int ii : k.blocks[size_t(bi)].insns) {
          const Insn &in = k.insns[size_t(ii)];
          for (const char *mul : {"mul.lo.s64", "mul.lo.u64", "mad.lo.s64", "mad.lo.u64"})
            wide_mul += in.op == mul;
          if (in.op.rfind("cp.async.cg.shared.global", 0) == 0)
            ++copies;
          else if (in.op.rfind("setp.", 0) == 0 || in.op.rfind("and.b64", 0) == 0 ||
                   in.op.rfind("or.b64", 0) == 0 || in.op.rfind("mul", 0) == 0)
            ++arith;
          if (in.op.rfind("ld.shared.v4", 0) == 0)
            for (const std::string &o : in.operands)
              if (o.front() == '[')
                ++shared_bases[Kernel::address_reg(o)];
        }
        if (copies >= 2 && arith == 0)
          interior_copies = std::max(interior_copies, copies);
      }
      CHECK(wide_mul == 0);
      CHECK(interior_copies >= 2); // w's (the GEMV) or a's and b's chunks, untested
      if (std::string(file).find("kloop_gemv") != std::string::npos) {
        // w's four 16-byte vectors per thread from one address
        int most = 0;
        for (const auto &kv : shared_bases)
          most = std::max(most, kv.second);
        CHECK(most >= 4);
      }
    }
}

TEST_CASE("naive GEMV: its K loop is a 3-stage cp.async ring with lean steps") {
  using namespace etl::ptxcheck;
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    const std::string ptx = ptx_of(target);
    // The prologue's two groups come before the loop's wait.
    const size_t in_loop = ptx.find("cp.async.wait_group 1;");
    REQUIRE(in_loop != std::string::npos);
    size_t prologue_end = 0;
    for (int g = 0; g < 2; ++g) {
      prologue_end = ptx.find("cp.async.commit_group;", g ? prologue_end + 1 : 0);
      REQUIRE(prologue_end < in_loop);
    }
    CHECK(ptx.find("cp.async.wait_group 0;", in_loop) != std::string::npos); // the drain
    // The K loop: the innermost natural loop around the wait.
    const Kernel k = parse_kernel(ptx);
    const std::set<int> loop = k_loop(k);
    std::map<std::string, int> ops;
    int arg_loads = 0;
    for (int bi : loop)
      for (int ii : k.blocks[size_t(bi)].insns) {
        const Insn &in = k.insns[size_t(ii)];
        ++ops[in.op];
        for (const std::string &o : in.operands)
          if (in.op.rfind("ld.global", 0) == 0 && o.front() == '[' &&
              k.is_args_pointer(Kernel::address_reg(o)))
            ++arg_loads;
      }
    auto n = [&](const std::string &prefix) {
      int c = 0;
      for (const auto &[op, times] : ops)
        if (op.rfind(prefix, 0) == 0)
          c += times;
      return c;
    };
    CHECK(n("cp.async.cg.shared.global") >= 2); // w's chunks and x's
    CHECK(n("cp.async.commit_group") == 1);
    CHECK(n("bar.sync") == 1);
    CHECK(n("ld.shared.v4") >= 4);    // w: 8 bf16 a vector
    CHECK(n("ld.global.nc.v4") == 0); // w never goes global -> registers
    CHECK(n("rem.") == 0);
    CHECK(n("div.") == 0);
    CHECK(n("shfl.sync") == 0); // the sum across threads is after the loop
    CHECK(n("fma.rn.f32") >= 32);
    CHECK(arg_loads == 0);
  }
}

// sm_90a: the same rings filled by TMA (tile/pipeline.cpp's kTmaRing,
// lower/lower_tma.cpp). Before the loop thread 0 initialises the mbarriers
// (2 rings x 3 stages), fences the async proxy and issues the prologue's
// boxes; in the loop one cp.async.bulk.tensor per ring (w 2-D, x 1-D) after
// its mbarrier.arrive.expect_tx, one mbarrier.try_wait.parity per ring, the
// ring's one barrier, and no cp.async at all (no commit or wait_group
// either); after it the mbarriers are invalidated. ptxas -arch=sm_90a
// assembles it without spills.
TEST_CASE("naive GEMV on sm_90a: its K loop's rings are TMA copies completing on mbarriers") {
  using namespace etl::ptxcheck;
  const std::string ptx = ptx_of("sm_90a");
  auto count = [&](const std::string &what) {
    int n = 0;
    for (size_t at = ptx.find(what); at != std::string::npos; at = ptx.find(what, at + 1))
      ++n;
    return n;
  };
  CHECK(count("mbarrier.init.shared::cta.b64") == 6);
  CHECK(count("fence.proxy.async.shared::cta;") == 2);
  CHECK(count("mbarrier.inval.shared::cta.b64") == 6);
  CHECK(count("cp.async.cg") == 0);
  CHECK(count("cp.async.commit_group") == 0);
  CHECK(count("cp.async.wait_group") == 0);
  const Kernel k = parse_kernel(ptx);
  int wait = -1;
  for (size_t i = 0; i < k.insns.size() && wait < 0; ++i)
    if (k.insns[i].op.rfind("mbarrier.try_wait.parity", 0) == 0)
      wait = int(i);
  REQUIRE(wait >= 0);
  // The K loop: the smallest natural loop around the wait that is not the
  // wait's own polling loop (it holds the barrier).
  std::set<int> loop;
  for (const std::set<int> &l : k.loops()) {
    if (!l.count(k.insns[size_t(wait)].block))
      continue;
    bool bar = false;
    for (int bi : l)
      for (int ii : k.blocks[size_t(bi)].insns)
        bar = bar || k.insns[size_t(ii)].op == "bar.sync";
    if (bar && (loop.empty() || l.size() < loop.size()))
      loop = l;
  }
  REQUIRE(!loop.empty());
  std::map<std::string, int> ops;
  for (int bi : loop)
    for (int ii : k.blocks[size_t(bi)].insns)
      ++ops[k.insns[size_t(ii)].op];
  auto n = [&](const std::string &prefix) {
    int c = 0;
    for (const auto &[op, times] : ops)
      if (op.rfind(prefix, 0) == 0)
        c += times;
    return c;
  };
  CHECK(n("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") == 1);
  CHECK(n("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes") == 1);
  CHECK(n("mbarrier.arrive.expect_tx.shared::cta.b64") == 2);
  CHECK(n("mbarrier.try_wait.parity.shared::cta.b64") == 2);
  CHECK(n("bar.sync") == 1);
  CHECK(n("cp.async.cg") == 0);
  CHECK(n("ld.global.nc.v4") == 0); // w never goes global -> registers
  CHECK(n("fma.rn.f32") >= 32);
  if (std::string(ETL_PTXAS).empty()) {
    ETL_TEST_SKIP("ptxas not found at configure time: skipping the sm_90a assembly check");
    return;
  }
  std::string log;
  int rc = run_ptxas(ptx, "sm_90a", log);
  INFO(log);
  CHECK(rc == 0);
  CHECK(spill_bytes(log) == 0);
}
