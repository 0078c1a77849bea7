//===- tests/unit/target/atomics_ptx_test.cpp - Tensor atomics in PTX -----===//
//
// What this covers: tests/unit/target/atomics.etl (atomic_add/max/min/cas
// on f32, f16, bf16, i32 and i64) compiled for sm_80 and sm_90: the PTX
// has the global atomics the reference promises (grammar/REFERENCE.md
// section 19: hardware f16 add everywhere, bf16 add on sm_90 only, a cas
// loop otherwise), and ptxas accepts it (skipped with a message when
// ptxas is absent).
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"

#include "../skip.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace etl;

TEST_CASE("atomics: PTX has atom.global add/max/min/cas of each type, ptxas accepts") {
  for (const char *target : {"sm_80", "sm_90"}) {
    INFO(target);
    CompileOptions o;
    o.input = std::string(ETL_SOURCE_DIR) + "/tests/unit/target/atomics.etl";
    o.targets = {target};
    o.emit = "ptx";
    std::ostringstream out, err;
    REQUIRE_MESSAGE(compile(o, out, err) == 0, err.str());
    std::string ptx = out.str();
    for (const char *insn : {"atom.global.add.f32", "atom.global.add.noftz.f16",
                             "atom.global.add.u32", "atom.global.max.s32", "atom.global.min.s64",
                             "atom.global.add.u64", "atom.global.cas.b32", "atom.global.cas.b64"})
      CHECK_MESSAGE(ptx.find(insn) != std::string::npos, "no " << insn << " in the PTX");
    bool sm90 = std::string(target) == "sm_90";
    CHECK_MESSAGE((ptx.find("atom.global.add.noftz.bf16") != std::string::npos) == sm90,
                  "bf16 add: hardware on sm_90 only");
    // Relaxed: no ordering qualifier on the tensor atomics (the event
    // protocol's own atomics carry .release/.acq_rel).
    CHECK(ptx.find("atom.acq_rel.gpu.global.add.f32") == std::string::npos);
    if (std::string(ETL_PTXAS).empty()) {
      ETL_TEST_SKIP("ptxas not found at configure time: skipping PTX assembly for " << target);
      continue;
    }
    std::string in = "/tmp/etl-atomics-" + std::to_string(getpid()) + "-" + target + ".ptx";
    std::ofstream(in) << ptx;
    std::string cmd = std::string(ETL_PTXAS) + " -arch=" + target + " " + in + " -o /dev/null";
    int rc = std::system(cmd.c_str());
    std::remove(in.c_str());
    CHECK_MESSAGE(rc == 0, "ptxas rejected the PTX for " << target);
  }
}
