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
  CHECK(find_target("sm_90a")->smem_limit == 227u * 1024u);
  CHECK(kSmemHeaderBytes == 32u);
  // A compilation's budget is its smallest target's (the artifact's list,
  // not every target of targets.def); sim alone gets the largest GPU's, so
  // what sim accepts still fits some GPU.
  CHECK(target_info({"sm_90"}).smem_budget == 227u * 1024u);
  CHECK(target_info({"sm_90", "sim"}).smem_budget == 227u * 1024u);
  CHECK(target_info({"sm_90", "sm_80"}).smem_budget == 163u * 1024u);
  CHECK(target_info({"sim"}).smem_budget == 227u * 1024u);
  CHECK(target_info({"sm_86", "sm_90"}).smem_budget == 99u * 1024u);
  CHECK(target_info({"sm_90", "sm_42"}).smem_budget == 227u * 1024u); // unknown names ignored
  CHECK(target_info({"sm_90", "sm_42"}).targets.size() == 1);
  CHECK(every_target_info().smem_budget == 99u * 1024u);
  CHECK(every_target_info().targets.size() == all_targets().size());
}

TEST_CASE("target table: compute capability and register file") {
  CHECK(find_target("sim")->sm == 0);
  CHECK(find_target("sm_80")->sm == 80);
  CHECK(find_target("sm_86")->sm == 86);
  CHECK(find_target("sm_89")->sm == 89);
  CHECK(find_target("sm_90")->sm == 90);
  CHECK(find_target("sm_90a")->sm == 90); // Hopper's architecture-specific target
  for (const TargetDesc &t : all_targets()) {
    CAPTURE(t.name);
    // The name spells the capability (nvptx.cpp hands it to LLVM as the CPU),
    // `a` for an architecture-specific one, which needs PTX 8.0.
    std::string sm = "sm_" + std::to_string(t.sm);
    if (t.sm == 0)
      CHECK(std::string(t.name) == "sim");
    else
      CHECK((t.name == sm || t.name == sm + "a"));
    CHECK(t.ptx == (t.sm == 0 ? 0u : t.name == sm + "a" ? 80u : 78u));
    CHECK(t.regs_per_sm == (t.kind == TargetKind::Nvptx ? 65536u : 0u));
    CHECK(t.regs_per_thread == (t.kind == TargetKind::Nvptx ? 255u : 0u));
  }
  // The tightest GPU target of the list sets the register budget.
  std::string which;
  CHECK(target_info({"sim"}).register_limit(128, &which) == 0);
  CHECK(target_info({"sim", "sm_90"}).register_limit(512, &which) == 128);
  CHECK(which == "sm_90");
  CHECK(target_info({"sm_80", "sm_90"}).register_limit(384, &which) == 168);
  CHECK(which == "sm_80");
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
