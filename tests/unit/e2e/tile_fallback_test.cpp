//===- tests/unit/e2e/tile_fallback_test.cpp - ETL_TILE_DEBUG after a fallback -===//
//
// What this pins: BackendResult::lowering (ETL_TILE_DEBUG's "lowering
// GROUP: PATH" lines) reports the path a body's code really took. A body
// whose tile IR lowering throws LowerError after tile_unported let it
// through is lowered again from the AST (Lowerer::lower_group); the line
// then says "AST (fallback: <the error>)", not "tile IR". The throw is
// provoked by a machine decorator that refuses the non-coherent loads only
// the tile IR path issues (Machine::global_load_nc, for tensors the kernel
// never writes); the AST path's plain loads still work, and the run on sim
// gives the right sums.
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"
#include "forwarding_machine.h"
#include "lower/lowerer.h"

#include <etl/etl.h>

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etl {
namespace {

constexpr const char *kSrc = R"(
const TM = 16;
const TN = 64;
kernel rows<M: dim, N: dim>(x: tensor<f32>[M, N], y: tensor<f32>[M]) where N % 64 == 0 {
  task t[i in 0 .. cdiv(M, TM)] {
    var acc = zeros<f32>[TM];
    for j in 0 .. N / TN {
      acc += sum(load(x[i * TM .. +TM, j * TN .. +TN]), axis = 1);
    }
    store(y[i * TM .. +TM], acc);
  }
}
)";

/// The sim machine, except that a non-coherent load throws LowerError.
class NoNcLoads : public testing::ForwardingMachine {
public:
  using ForwardingMachine::ForwardingMachine;
  llvm::Value *global_load_nc(Builder &, llvm::Type *, llvm::Value *) override {
    throw LowerError("the test's machine refuses ld.global.nc");
  }
};

MachineWrapper no_nc_loads() {
  return [](std::unique_ptr<Machine> m) {
    return std::unique_ptr<Machine>(new NoNcLoads(std::move(m)));
  };
}

/// ETL_TILE_DEBUG's lowering lines of kSrc for sim, through `wrap`.
std::string route(MachineWrapper wrap) {
  CompileOptions o;
  o.targets = {"sim"};
  o.emit = "llvm";
  o.threads_per_cta = 64;
  o.wrap_machine = std::move(wrap);
  std::string out, err, lines;
  int code = testing::compile_text_tile_debug(kSrc, o, "lowering ", out, err, lines);
  INFO(err);
  REQUIRE(code == 0);
  return lines;
}

} // namespace

TEST_CASE("ETL_TILE_DEBUG: a body that falls back from the tile IR is reported as AST, with why") {
  CHECK(route(nullptr) == "lowering t: tile IR\n");
  CHECK(route(no_nc_loads()) ==
        "lowering t: AST (fallback: the test's machine refuses ld.global.nc)\n");

  const int64_t M = 40, N = 192; // a masked last row block
  std::vector<float> x(size_t(M * N)), y(size_t(M), -1.0f);
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = float(int((k * 37) % 9) - 4); // small integers: exact sums in any order
  testing::RunOptions run;
  run.threads_per_cta = 64;
  run.wrap_machine = no_nc_loads();
  std::string err = testing::compile_and_run(kSrc, "tile_fallback", {{"M", M}, {"N", N}},
                                             {{"x", x.data(), ETL_F32, {M, N}},
                                              {"y", y.data(), ETL_F32, {M}}},
                                             run);
  REQUIRE_MESSAGE(err.empty(), err);
  int bad = 0;
  for (int64_t r = 0; r < M; ++r) {
    float s = 0;
    for (int64_t c = 0; c < N; ++c)
      s += x[size_t(r * N + c)];
    bad += y[size_t(r)] != s;
  }
  CHECK(bad == 0);
}

} // namespace etl
