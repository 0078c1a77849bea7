//===- tests/unit/e2e/lower_error_test.cpp - A lowering failure is an ICE -===//
//
// What this pins: every task body is lowered from its tile IR, with no
// second path behind it. When the lowering of a checked program throws
// LowerError (a compiler bug), etlc stops with an internal compiler error
// (exit 3) that names the error and asks for a bug report, and writes no
// artifact. The throw is provoked by a machine decorator that refuses the
// non-coherent loads the body's read-only tensor takes
// (Machine::global_load_nc).
//
//===----------------------------------------------------------------------===//
#include "compile_run.h"
#include "forwarding_machine.h"
#include "lower/plan.h"

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

/// etlc on kSrc for sim through `wrap`: its exit code and stderr.
std::pair<int, std::string> compile_with(MachineWrapper wrap) {
  CompileOptions o;
  o.targets = {"sim"};
  o.emit = "llvm";
  o.threads_per_cta = 64;
  o.wrap_machine = std::move(wrap);
  std::string out, err, lines;
  int code = testing::compile_text_tile_debug(kSrc, o, "lowering ", out, err, lines);
  return {code, err};
}

} // namespace

TEST_CASE("lowering: a LowerError is an internal compiler error, never another path") {
  const std::pair<int, std::string> ok = compile_with(nullptr);
  INFO(ok.second);
  CHECK(ok.first == 0);
  const std::pair<int, std::string> bad = compile_with(no_nc_loads());
  const int code = bad.first;
  const std::string &err = bad.second;
  CHECK(code == 3); // kExitInternalError
  CHECK(err.find("internal compiler error") != std::string::npos);
  CHECK(err.find("the test's machine refuses ld.global.nc") != std::string::npos);
  CHECK(err.find("please report this") != std::string::npos); // NoteReportBug

  // The same failure through the runtime test harness: no artifact to run.
  const int64_t M = 40, N = 192;
  std::vector<float> x(size_t(M * N)), y(size_t(M), -1.0f);
  testing::RunOptions run;
  run.threads_per_cta = 64;
  run.wrap_machine = no_nc_loads();
  std::string failed = testing::compile_and_run(kSrc, "lower_error", {{"M", M}, {"N", N}},
                                                {{"x", x.data(), ETL_F32, {M, N}},
                                                 {"y", y.data(), ETL_F32, {M}}},
                                                run);
  CHECK(failed.find("refuses ld.global.nc") != std::string::npos);
  CHECK(y[0] == -1.0f); // nothing ran
}

} // namespace etl
