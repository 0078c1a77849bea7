//===- tests/unit/driver/facts_test.cpp - Tables other languages read -----===//
//
// What this pins: facts with one home in a C++ table that a script or
// another language reads again. scripts/def_facts.py (what scripts/bench.sh
// takes its H100 numbers from) parses compiler/target/targets.def and
// compiler/cost/gpus.def itself; every row and field it prints must equal
// what etlc reads from the same files (all_targets, known_gpus), so a new
// column or a row the script misreads fails here. Runs Debian's
// /usr/bin/python3 (skipped, saying so, where it is missing).
//
//===----------------------------------------------------------------------===//
#include "cost/cost.h"
#include "target/target.h"

#include <doctest/doctest.h>
#include <llvm/Support/JSON.h>

#include <cstdio>
#include <string>
#include <unistd.h>

using namespace etl;

namespace {

constexpr const char *kPython = "/usr/bin/python3";

/// The output of `cmd` (its exit status in `status`).
std::string run(const std::string &cmd, int &status) {
  std::string out;
  FILE *f = popen(cmd.c_str(), "r");
  REQUIRE(f);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f))
    out.append(buf, n);
  status = pclose(f);
  return out;
}

} // namespace

TEST_CASE("scripts/def_facts.py reads targets.def and gpus.def as etlc does") {
  if (access(kPython, X_OK) != 0) {
    MESSAGE("skipped: no " << kPython);
    return;
  }
  int status = 0;
  std::string out =
      run(std::string(kPython) + " " + ETL_SOURCE_DIR + "/scripts/def_facts.py json", status);
  REQUIRE(status == 0);
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(out);
  REQUIRE_MESSAGE(bool(doc), out);
  const llvm::json::Object *root = doc->getAsObject();
  REQUIRE(root);

  const llvm::json::Array *ts = root->getArray("targets");
  REQUIRE(ts);
  REQUIRE(ts->size() == all_targets().size());
  for (size_t i = 0; i < ts->size(); ++i) {
    const TargetDesc &t = all_targets()[i];
    const llvm::json::Object *r = (*ts)[i].getAsObject();
    REQUIRE(r);
    CAPTURE(t.name);
    CHECK(r->getString("name").value_or("") == t.name);
    CHECK(r->getString("kind").value_or("") == (t.kind == TargetKind::Sim ? "Sim" : "Nvptx"));
    CHECK(r->getInteger("sm").value_or(-1) == t.sm);
    CHECK(r->getInteger("smem_limit").value_or(-1) == t.smem_limit);
    CHECK(r->getInteger("regs_per_sm").value_or(-1) == t.regs_per_sm);
    CHECK(r->getInteger("regs_per_thread").value_or(-1) == t.regs_per_thread);
    CHECK(r->getInteger("wide_tile").value_or(-1) == t.wide_tile);
    CHECK(r->getString("what").value_or("") == t.what);
  }

  const llvm::json::Array *gs = root->getArray("gpus");
  REQUIRE(gs);
  REQUIRE(gs->size() == known_gpus().size());
  for (size_t i = 0; i < gs->size(); ++i) {
    const GpuSpec &g = known_gpus()[i];
    const llvm::json::Object *r = (*gs)[i].getAsObject();
    REQUIRE(r);
    CAPTURE(g.id);
    CHECK(r->getString("id").value_or("") == g.id);
    CHECK(r->getNumber("hbm_gb_per_s").value_or(-1) == g.hbm_gbps);
    CHECK(r->getNumber("fp32_tflops").value_or(-1) == g.fp32_tflops);
    CHECK(r->getNumber("tc16_tflops").value_or(-1) == g.tc16_tflops);
    CHECK(r->getNumber("tf32_tflops").value_or(-1) == g.tf32_tflops);
    CHECK(r->getInteger("sms").value_or(-1) == g.sms);
    CHECK(r->getInteger("boost_mhz").value_or(-1) == g.boost_mhz);
    CHECK(r->getString("source").value_or("") == g.source);
  }

  // One field, as scripts/bench.sh asks for it.
  std::string smem = run(std::string(kPython) + " " + ETL_SOURCE_DIR +
                             "/scripts/def_facts.py target sm_90 smem_limit",
                         status);
  CHECK(status == 0);
  CHECK(smem == std::to_string(find_target("sm_90")->smem_limit) + "\n");
}
