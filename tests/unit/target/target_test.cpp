//===- tests/unit/target/target_test.cpp - The target table ---------------===//
//
// What this covers: target/targets.def as the one list of targets: every
// entry is found by name, has a machine LLVM can build, and the budgets sema
// and the back end read come from it.
//
//===----------------------------------------------------------------------===//
#include "target/machine.h"
#include "target/target.h"

#include <doctest/doctest.h>

using namespace etl;

TEST_CASE("target table: every target is found by name and has a machine") {
  REQUIRE(!all_targets().empty());
  for (const TargetDesc &t : all_targets()) {
    INFO(t.name);
    CHECK(find_target(t.name) == &t);
    CHECK(target_names().find(t.name) != std::string::npos);
    std::string err;
    std::unique_ptr<Machine> m = make_machine(t, MachineOptions{}, err);
    CHECK_MESSAGE(m, err);
    if (m)
      CHECK(m->target() == t.name);
  }
  CHECK(find_target("sm_70") == nullptr);
  CHECK(find_target("") == nullptr);
}

TEST_CASE("target table: the shared-memory budgets") {
  // sim has no budget; each PTX target's is the device's opt-in maximum of
  // dynamic shared memory per block (cudaDevAttrMaxSharedMemoryPerBlockOptin).
  CHECK(find_target("sim")->smem_limit == 0);
  CHECK(find_target("sm_80")->smem_limit == 163u * 1024u);
  CHECK(find_target("sm_86")->smem_limit == 99u * 1024u);
  CHECK(find_target("sm_89")->smem_limit == 99u * 1024u);
  CHECK(find_target("sm_90")->smem_limit == 227u * 1024u);
  CHECK(portable_smem_limit() == 99u * 1024u);
  CHECK(kSmemHeaderBytes == 32u);
  // A compilation's budget is its smallest target's; sim alone gets the
  // largest GPU's, so what sim accepts still fits some GPU.
  CHECK(smem_limit_for({"sm_90"}) == 227u * 1024u);
  CHECK(smem_limit_for({"sm_90", "sim"}) == 227u * 1024u);
  CHECK(smem_limit_for({"sm_90", "sm_80"}) == 163u * 1024u);
  CHECK(smem_limit_for({"sim"}) == 227u * 1024u);
  CHECK(smem_limit_for({"sm_86", "sm_90"}) == 99u * 1024u);
}

TEST_CASE("target table: threads per CTA follow the largest tile") {
  for (const TargetDesc &t : all_targets()) {
    INFO(t.name);
    CHECK(default_threads(t, 0) == 128u);
    CHECK(default_threads(t, 2047) == 128u);
    CHECK(default_threads(t, 2048) == 256u);
    CHECK(default_threads(t, 65536) == 256u);
  }
}
