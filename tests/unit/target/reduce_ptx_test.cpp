//===- tests/unit/target/reduce_ptx_test.cpp - Reductions by shfl.sync ---===//
//
// The PTX of reductions (compiler/lower/lower_tile_reduce.cpp): row sums, maxima
// and argmax reduce across lanes with `shfl.sync.bfly` over the full warp,
// and no loop without a barrier reads shared memory (the serial walk of a
// row by one thread is gone); a hand-written serial walk of scratch shows
// the check can fail. The memory-bound examples reduce with shuffles too,
// and ptxas accepts the PTX.
//
//===----------------------------------------------------------------------===//
#include "ptx_cfg.h"
#include "ptx_programs.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace etl;
using etl::ptxcheck::compile_ptx;

namespace {

/// Row sums, maxima and argmax of a [16, C] tile; `columns`: along axis 0.
std::string row_program(int64_t C, bool columns = false) {
  fs::path dir = fs::path(ETL_TEST_BINARY_DIR) / "reduce_ptx";
  fs::create_directories(dir);
  fs::path p = dir / ("rows_" + std::to_string(C) + (columns ? "_cols" : "") + ".etl");
  std::string out = columns ? "TN" : "TM", ax = columns ? "0" : "1";
  std::ofstream(p) << "const TM = 16;\nconst TN = " << C << R"(;
kernel rows<M: dim>(x: tensor<f32>[M, TN], s: tensor<f32>[M], mx: tensor<f32>[M],
                    am: tensor<i32>[M]) {
  task t[i in 0 .. cdiv(M, TM)] {
    let a = load(x[i * TM .. +TM, 0 .. +TN]);
    store(s[i * )" << out
                   << " .. +" << out << "], sum(a, axis = " << ax << R"());
    store(mx[i * )" << out
                   << " .. +" << out << "], max(a, axis = " << ax << R"());
    store(am[i * )" << out
                   << " .. +" << out << "], argmax(a, axis = " << ax << R"());
  }
}
)";
  return p.string();
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

/// Loops that read shared memory but hold no barrier: a thread walking
/// scratch on its own.
int serial_shared_loops(const ptxcheck::Kernel &k) {
  int n = 0;
  for (const std::set<int> &loop : k.loops()) {
    bool reads = false, barrier = false;
    for (int bl : loop)
      for (int i : k.blocks[size_t(bl)].insns) {
        const std::string &op = k.insns[size_t(i)].op;
        reads |= op.rfind("ld.shared", 0) == 0;
        barrier |= op.rfind("bar.sync", 0) == 0 || op.rfind("barrier", 0) == 0;
      }
    n += reads && !barrier;
  }
  return n;
}

void assemble(const std::string &ptx, const char *target) {
  if (std::string(ETL_PTXAS).empty()) {
    ETL_TEST_SKIP("ptxas not found at configure time: not assembling");
    return;
  }
  std::string in = "/tmp/etl-reduce-" + std::to_string(getpid()) + "-" + target + ".ptx";
  std::ofstream(in) << ptx;
  std::string cmd = std::string(ETL_PTXAS) + " -arch=" + target + " " + in + " -o /dev/null 2>&1";
  int rc = std::system(cmd.c_str());
  std::remove(in.c_str());
  CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << target);
}

} // namespace

TEST_CASE("row reductions use shfl.sync butterflies and no serial walk of shared memory") {
  for (const char *target : {"sm_90", "sm_80"}) {
    CAPTURE(target);
    std::string ptx = compile_ptx(row_program(128), target);
    // sum, max and argmax (value and index) over 5 lane bits each: 20 at least
    CHECK(count(ptx, "shfl.sync.bfly.b32") >= 20);
    ptxcheck::Kernel k = ptxcheck::parse_kernel(ptx);
    CHECK(serial_shared_loops(k) == 0);
    assemble(ptx, target);
  }
}

TEST_CASE("rows of a length that is not a power of two reduce by segments of lanes") {
  std::string ptx = compile_ptx(row_program(100), "sm_90");
  CHECK(count(ptx, "shfl.sync.bfly.b32") >= 20);
  assemble(ptx, "sm_90");
}

TEST_CASE("columns of a length that is not a power of two reduce with no serial walk") {
  std::string ptx = compile_ptx(row_program(100, true), "sm_90");
  CHECK(serial_shared_loops(ptxcheck::parse_kernel(ptx)) == 0);
  assemble(ptx, "sm_90");
}

TEST_CASE("a thread walking shared memory in a loop without a barrier is a serial walk (the "
          "check can fail)") {
  // One thread sums 100 floats of scratch (the walk the old reductions
  // made); the same loop with a bar.sync in it is a cooperative step.
  std::string walk = R"(.version 7.8
.target sm_90
.address_size 64
.visible .entry etl_main(
	.param .u64 etl_main_param_0
)
{
	.reg .pred %p<3>;
	.reg .b32 %r<4>;
	.reg .f32 %f<4>;
	.shared .align 4 .b8 scratch[400];
	mov.u32 	%r1, %tid.x;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_3;
	mov.u32 	%r2, scratch;
	mov.f32 	%f1, 0f00000000;
$L__BB0_2:
	ld.shared.f32 	%f2, [%r2];
	BARRIER
	add.f32 	%f1, %f1, %f2;
	add.s32 	%r2, %r2, 4;
	setp.lt.u32 	%p2, %r2, scratch+400;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
	ret;
}
)";
  std::string synced = walk;
  walk.replace(walk.find("\tBARRIER\n"), 10, "");
  synced.replace(synced.find("BARRIER"), 7, "bar.sync 	0;");
  ptxcheck::Kernel k = ptxcheck::parse_kernel(walk);
  REQUIRE(k.loops().size() == 1);
  CHECK(serial_shared_loops(k) == 1);
  CHECK(serial_shared_loops(ptxcheck::parse_kernel(synced)) == 0);
}

TEST_CASE("the memory-bound examples reduce with shfl.sync") {
  for (const char *ex : {"rowsum", "softmax", "gemv", "decode_attention", "rmsnorm_rope"}) {
    CAPTURE(ex);
    fs::path p = fs::path(ETL_SOURCE_DIR) / "examples" / ex / (std::string(ex) + ".etl");
    std::string ptx = compile_ptx(p.string(), "sm_90");
    CHECK(count(ptx, "shfl.sync.bfly.b32") > 0);
    if (std::string(ex) != "rmsnorm_rope") // its dot still walks K in scratch
      CHECK(serial_shared_loops(ptxcheck::parse_kernel(ptx)) == 0);
  }
}
