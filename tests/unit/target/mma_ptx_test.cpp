//===- tests/unit/target/mma_ptx_test.cpp - Tensor-core dots in PTX ------===//
//
// What this covers: f16/bf16 `dot`s on the tensor-core path
// (compiler/lower/lower_tile_mma.cpp) compiled for sm_80 and sm_90:
// examples/gemm (bf16, n16 blocks) and tests/unit/runtime/programs/mma_dot.etl
// (bf16 with n8 blocks, f16) have mma.sync m16n8k16 with f32 accumulation
// and ldmatrix (.x4 for A, .trans for the row-major B; plain for the b of
// dot(a, transpose(b)): programs/mma_dot_nt.etl, prefill_attention's
// q k^T) in their PTX, their
// operands (loads of slices) arrive by cp.async (commit_group, wait_group;
// the K loops of gemm and programs/mma_pipeline.etl are three-stage rings,
// wait_group 1, with no result stores inside the loop, mma_pipeline_deep.etl's
// (48 x 24 tiles: layouts over the padded 64 x 32) too on sm_80 and sm_90
// but a two-stage one, wait_group 0, on sm_86 and sm_89, whose
// shared-memory budget three stages pass;
// 0 ptxas spills),
// and in the LLVM IR every mma/ldmatrix call carries the `convergent`
// attribute; examples/mlp/mlp_bf16.etl and examples/moe/moe_bf16.etl have a
// three-stage ring for every K loop. ptxas acceptance and zero spills of
// every example: all_examples_ptx_test.cpp.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "ptx_programs.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace etl;

namespace {

std::string compile_to(const std::string &path, const char *target, const char *emit) {
  CompileOptions o;
  o.input = std::string(ETL_SOURCE_DIR) + "/" + path;
  o.targets = {target};
  o.emit = emit;
  std::ostringstream out, err;
  int rc = compile(o, out, err);
  INFO(err.str());
  REQUIRE(rc == 0);
  return out.str();
}

} // namespace

TEST_CASE("f16/bf16 dots: the PTX has mma.sync m16n8k16 and ldmatrix") {
  struct Case {
    const char *path;
    std::vector<const char *> insns;
  };
  const Case cases[] = {
      {"examples/gemm/gemm.etl",
       {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "cp.async.cg.shared.global",
        "cp.async.commit_group", "cp.async.wait_group 0"}},
      {"tests/unit/runtime/programs/mma_dot.etl",
       {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        // (n8 column blocks per warp on the tile IR: t's 24 columns, and
        // h's 32 over 4 warps, load B by .x2.trans)
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "cp.async.cg.shared.global"}},
  };
  for (const Case &c : cases)
    for (const char *target : {"sm_80", "sm_90"}) {
      CAPTURE(c.path);
      CAPTURE(target);
      std::string ptx = compile_to(c.path, target, "ptx");
      for (const char *insn : c.insns)
        CHECK_MESSAGE(ptx.find(insn) != std::string::npos, "no " << insn << " in the PTX");
    }
}

TEST_CASE("f16/bf16 dots: a K loop of acc += dot(load, load) is a cp.async ring of 3 stages "
          "(2 where 3 do not fit), with the accumulators in registers across a 3-stage loop") {
  struct Case {
    const char *path;
    int stages;
    std::vector<const char *> targets;
  };
  // mma_pipeline_deep's three stages fit sm_80's and sm_90's budgets (163
  // and 227 KiB) but not sm_86's or sm_89's (99 KiB): two stages there.
  const Case cases[] = {
      {"examples/gemm/gemm.etl", 3, {"sm_80", "sm_90"}},
      {"tests/unit/runtime/programs/mma_pipeline.etl", 3, {"sm_80", "sm_90"}},
      {"tests/unit/runtime/programs/mma_pipeline_deep.etl", 3, {"sm_80", "sm_90"}},
      {"tests/unit/runtime/programs/mma_pipeline_deep.etl", 2, {"sm_86", "sm_89"}}};
  for (const Case &c : cases)
    for (const char *target : c.targets) {
      CAPTURE(c.path);
      CAPTURE(target);
      std::string ptx = compile_to(c.path, target, "ptx");
      // The loop's wait leaves the newest S - 2 groups pending; the
      // prologue's S - 1 groups come before it.
      std::string wait = "cp.async.wait_group " + std::to_string(c.stages - 2) + ";";
      size_t in_loop = ptx.find(wait);
      REQUIRE(in_loop != std::string::npos);
      if (c.stages == 3)
        CHECK(ptx.find("cp.async.wait_group 0;") > in_loop);
      size_t prologue_end = 0;
      for (int g = 0; g + 1 < c.stages; ++g) {
        prologue_end = ptx.find("cp.async.commit_group;", g ? prologue_end + 1 : 0);
        REQUIRE(prologue_end < in_loop);
      }
      // The loop's blocks lie between the prologue and the drain after the
      // loop (wait_group 0; LLVM rotates the loop, so the wait is not its
      // first line): one barrier, the next stage's copies and commit, the
      // mma on the fragments that stay in registers, and no result written
      // to shared memory (st.shared.v2.f32: the C fragment pairs), in a ring
      // of two stages too.
      size_t drain = ptx.find("cp.async.wait_group 0;", in_loop + 1);
      REQUIRE(drain != std::string::npos);
      std::string loop = ptx.substr(prologue_end + 1, drain - prologue_end - 1);
      CHECK(loop.find("mma.sync.aligned.m16n8k16") != std::string::npos);
      CHECK(loop.find("cp.async.commit_group;") != std::string::npos);
      // Each takes the tile IR (tile/pipeline.cpp's ring): the accumulators
      // are the result's registers, never written back, mma_pipeline_deep's
      // 48 x 24 (layouts over 64 x 32, no mma for the padded blocks)
      // included.
      CHECK(loop.find("st.shared.v2.f32") == std::string::npos);
      size_t barriers = 0;
      for (size_t at = 0; (at = loop.find("bar.sync", at)) != std::string::npos; ++at)
        ++barriers;
      CHECK(barriers == 1u);
      CHECK(ptx.find(wait, drain + 1) == std::string::npos); // one loop
      CHECK(ptx.find("st.shared.v2.f32", drain) == std::string::npos);
      if (std::string(ETL_PTXAS).empty()) {
        ETL_TEST_SKIP("ptxas not found at configure time: skipping the spill check of " << c.path);
        continue;
      }
      std::string log;
      int rc = ptxcheck::run_ptxas(ptx, target, log);
      INFO(log);
      CHECK(rc == 0);
      CHECK(log.find("bytes spill stores") != std::string::npos);
      CHECK(ptxcheck::spill_bytes(log) == 0);
    }
  // mma_dot has no K loop: one group, waited for at once.
  for (const char *target : {"sm_80", "sm_90"}) {
    std::string single = compile_to("tests/unit/runtime/programs/mma_dot.etl", target, "ptx");
    CHECK(single.find("cp.async.wait_group 0;") != std::string::npos);
    CHECK(single.find("cp.async.wait_group 1;") == std::string::npos);
  }
}

TEST_CASE("f16/bf16 dots: dot(a, transpose(b)) loads b's fragments by plain ldmatrix from b "
          "staged untransposed") {
  // The B operand of a transposed b: the x2 loads of programs/mma_dot_nt.etl's
  // n8 units are not .trans (A's loads are always .x4).
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    std::string nt = compile_to("tests/unit/runtime/programs/mma_dot_nt.etl", target, "ptx");
    CHECK(nt.find("ldmatrix.sync.aligned.m8n8.x2.shared.b16") != std::string::npos);
    CHECK(nt.find("cp.async.cg.shared.global") != std::string::npos);
    // prefill_attention's q k^T (tile IR, q's fragments in registers): the
    // B loads of its k16 steps are plain .x4 one after the other (P V and
    // o_proj keep .trans for row-major B).
    std::string pa = compile_to("examples/prefill_attention/prefill_attention.etl", target, "ptx");
    std::istringstream lines(pa);
    std::string line, prev;
    int plain_pairs = 0;
    while (std::getline(lines, line)) {
      if (line.find("ldmatrix") == std::string::npos)
        continue;
      const bool plain_x4 =
          line.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos;
      plain_pairs += plain_x4 && prev == "plain";
      prev = plain_x4 ? "plain" : "other";
    }
    CHECK(plain_pairs >= 1);
    CHECK(pa.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);
  }
}

TEST_CASE("f16/bf16 dots: every mma and ldmatrix call is convergent in the LLVM IR") {
  std::string ir = compile_to("examples/gemm/gemm.etl", "sm_80", "llvm");
  std::regex call(R"(call .*@llvm\.nvvm\.(mma|ldmatrix)[^(]*\(.*\) #(\d+))");
  int calls = 0;
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), call); it != std::sregex_iterator();
       ++it) {
    ++calls;
    std::string group = "attributes #" + (*it)[2].str() + " = {";
    size_t at = ir.find(group);
    REQUIRE(at != std::string::npos);
    std::string attrs = ir.substr(at, ir.find('\n', at) - at);
    CHECK_MESSAGE(attrs.find("convergent") != std::string::npos, (*it)[0].str() << ": " << attrs);
  }
  CHECK(calls >= 3); // ldmatrix A, ldmatrix B, mma (more once unrolled)
  // Every mma/ldmatrix call matched the pattern (none without attributes).
  size_t all = 0;
  for (size_t at = 0; (at = ir.find("call ", at)) != std::string::npos; ++at) {
    size_t eol = ir.find('\n', at);
    std::string line = ir.substr(at, eol - at);
    all += line.find("@llvm.nvvm.mma") != std::string::npos ||
           line.find("@llvm.nvvm.ldmatrix") != std::string::npos;
  }
  CHECK(all == size_t(calls));
}

TEST_CASE("f16/bf16 dots: every K loop of the bf16 mlp and moe examples is a 3-stage cp.async "
          "ring on mma.sync") {
  // mlp_bf16: gate_up's two loops (x @ wg, x @ wu) and down's; moe_bf16: the
  // router's and the expert tiles' loops. Each loop waits with wait_group 1
  // (three stages) and drains with wait_group 0 after it; down, which waits
  // for gate_up, copies its ring's first stages before its wait
  // (lower/prefetch.cpp's ring_prefetch) and drains them on its abort path
  // too. That no dot takes
  // the FMA path is checked by the sim profile's tensor-core share
  // (example_mlp_bf16_tensor_cores, example_moe_bf16_tensor_cores).
  struct Case {
    const char *path;
    size_t loops, drains;
  };
  const Case cases[] = {{"examples/mlp/mlp_bf16.etl", 3, 4}, {"examples/moe/moe_bf16.etl", 2, 2}};
  auto count = [](const std::string &s, const char *what) {
    size_t n = 0;
    for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; ++at)
      ++n;
    return n;
  };
  for (const Case &c : cases)
    for (const char *target : {"sm_80", "sm_90"}) {
      CAPTURE(c.path);
      CAPTURE(target);
      std::string ptx = compile_to(c.path, target, "ptx");
      CHECK(count(ptx, "cp.async.wait_group 1;") == c.loops);
      CHECK(count(ptx, "cp.async.wait_group 0;") == c.drains);
      CHECK(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
      CHECK(ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);
      CHECK(ptx.find("cp.async.cg.shared.global") != std::string::npos);
    }
}

TEST_CASE("f16/bf16 dots: a K loop of several dots with a computed A operand is one cp.async "
          "ring (programs/mma_pipeline_multi.etl, tile/pipeline.cpp), its accumulators in "
          "registers") {
  auto count = [](const std::string &text, const char *insn) {
    size_t n = 0;
    for (size_t at = 0; (at = text.find(insn, at)) != std::string::npos; ++at)
      ++n;
    return n;
  };
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    std::string ptx =
        compile_to("tests/unit/runtime/programs/mma_pipeline_multi.etl", target, "ptx");
    // Three stages: the prologue's two groups, the loop's wait_group 1, the
    // drain's wait_group 0 after it.
    size_t in_loop = ptx.find("cp.async.wait_group 1;");
    REQUIRE(in_loop != std::string::npos);
    CHECK(count(ptx, "cp.async.wait_group 1;") == 1); // one ring
    size_t prologue_end = ptx.find("cp.async.commit_group;");
    REQUIRE(prologue_end < in_loop);
    prologue_end = ptx.find("cp.async.commit_group;", prologue_end + 1);
    REQUIRE(prologue_end < in_loop);
    size_t drain = ptx.find("cp.async.wait_group 0;", in_loop + 1);
    REQUIRE(drain != std::string::npos);
    std::string loop = ptx.substr(prologue_end + 1, drain - prologue_end - 1);
    // Three dots per iteration: the copies of the next stage (the raw loads
    // of a and b0 and the let bb), ldmatrix and mma of each, no accumulator
    // written to shared memory inside the loop; xa is staged from registers
    // (16-bit shared stores) and met by a second barrier.
    CHECK(count(loop, "cp.async.cg.shared.global") >= 3);
    CHECK(count(loop, "cp.async.commit_group;") == 1);
    CHECK(count(loop, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") >= 3);
    // (The tile IR's 16 x 32 accumulators over 4 warps: an n8 column block
    // each, so B comes by ldmatrix .x2.trans.)
    CHECK(count(loop, ".trans.shared.b16") >= 3);
    CHECK(count(loop, "st.shared.v2.f32") == 0);
    CHECK(count(loop, "st.shared.u16") + count(loop, "st.shared.b16") +
              count(loop, "st.shared.v2.b16") + count(loop, "st.shared.v4.b16") >
          0);
    CHECK(count(loop, "bar.sync") >= 2);
    // The accumulators are the results' registers (tile/pipeline.cpp's
    // ring on the tile IR): no write-back through shared memory after it.
    CHECK(ptx.find("st.shared.v2.f32", drain) == std::string::npos);
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping the spill check");
      continue;
    }
    std::string log;
    int rc = ptxcheck::run_ptxas(ptx, target, log);
    INFO(log);
    CHECK(rc == 0);
    CHECK(ptxcheck::spill_bytes(log) == 0);
  }
}

TEST_CASE("f16/bf16 dots: every K loop of dots in examples/decode_layer and "
          "examples/moe_layer is a cp.async ring of more than one stage") {
  struct Case {
    const char *path;
    size_t waits; ///< the rings' in-loop waits: one per K loop of f16/bf16 dots
  };
  // decode_layer: qproj, kproj, vproj, o_part, gate_up, down_part, and
  // o_part's loop (DH / TK = 2 steps) unrolled by LLVM: its wait twice;
  // moe_layer: route, gateup, down.
  const Case cases[] = {{"examples/decode_layer/decode_layer.etl", 7},
                        {"examples/moe_layer/moe_layer.etl", 3}};
  for (const Case &c : cases)
    for (const char *target : {"sm_80", "sm_90"}) {
      CAPTURE(c.path);
      CAPTURE(target);
      std::string ptx = compile_to(c.path, target, "ptx");
      size_t rings = 0;
      for (size_t at = 0; (at = ptx.find("cp.async.wait_group 1;", at)) != std::string::npos; ++at)
        ++rings;
      CHECK(rings == c.waits);
      CHECK(ptx.find("mma.sync.aligned.m16n8k16") != std::string::npos);
      CHECK(ptx.find("ldmatrix.sync.aligned") != std::string::npos);
      // The rings' opaque zero (Machine::opaque_zero) is a register `mov`,
      // not a volatile load of a local-memory slot (it was: 24 a program).
      CHECK(ptx.find(".local") == std::string::npos);
      CHECK(ptx.find("ld.volatile.u64") == std::string::npos);
    }
}

TEST_CASE("f16/bf16 dots: a chained dot's A operand stays in registers (no shared-memory stores "
          "of P)") {
  // tests/unit/target/mma_chain_pv.etl is attention's P V as one expression;
  // mma_chain_pv_split.etl the same with q k^T in a `let`. Both take the A
  // layout for P (mma_dot_col_warps keeps row blocks per warp
  // for a dot that feeds another's a, the 2 blocks over 4 warps replicated),
  // so both have only the stores that stage q, k and v: the same number.
  const std::regex st16(R"(st\.shared(\.v[248])?\.[ub]16)");
  auto count = [&](const std::string &ptx) {
    return std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), st16),
                         std::sregex_iterator());
  };
  for (const char *target : {"sm_80", "sm_90"}) {
    CAPTURE(target);
    std::string fused = compile_to("tests/unit/target/mma_chain_pv.etl", target, "ptx");
    std::string split = compile_to("tests/unit/target/mma_chain_pv_split.etl", target, "ptx");
    CHECK(fused.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
    const auto st_fused = count(fused), st_split = count(split);
    CAPTURE(st_fused);
    CAPTURE(st_split);
    CHECK(st_fused == st_split);
    CHECK(fused.find("ldmatrix") != std::string::npos);
  }
}
