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
    std::unique_ptr<Machine> m = make_machine(t, err);
    CHECK_MESSAGE(m, err);
    if (m)
      CHECK(m->target() == t.name);
  }
  CHECK(find_target("sm_70") == nullptr);
  CHECK(find_target("") == nullptr);
}

TEST_CASE("target table: the shared-memory budgets") {
  // sim has no budget; every PTX target has 48 KiB of static shared memory,
  // which is what a program must fit (sema's dot limit).
  CHECK(find_target("sim")->smem_limit == 0);
  for (const TargetDesc &t : all_targets())
    if (t.kind == TargetKind::Nvptx)
      CHECK(t.smem_limit == 48u * 1024u);
  CHECK(portable_smem_limit() == 48u * 1024u);
  CHECK(kSmemHeaderBytes == 32u);
}
