//===- tests/fuzz/fuzz_backend.cpp - libFuzzer harness: the whole compiler -===//
//
// Harness (b): the input is ETL source text. A program that passes the front
// end (parse .. schedule) is lowered to LLVM IR and compiled for `sim` (an
// x86-64 object) and `sm_90` (PTX), as `etlc compile --target sm_90,sim`
// does. The back end failing on a checked program is an internal compiler
// error (etlc exits with kExitInternalError), so here it aborts: a finding.
// The one expected back-end failure is a target limit the program exceeds
// (BackendResult::resource_limit: static shared memory).
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"
#include "../unit/lower/backend_harness.h"
#include "lower/backend.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  etl::Compilation c;
  c.file = c.sm.add("fuzz.etl", std::string(reinterpret_cast<const char *>(data), size));
  bool ok = etl::compile_front(c);
  std::string rendered = c.diag.render();
  if (!ok)
    return 0;
  etl::BackendResult be = etl::testing::lower_compiled(c, {"sim", "sm_90"});
  if (!be.ok && !be.resource_limit) {
    std::fprintf(stderr, "fuzz_backend: internal compiler error on a checked program: %s\n",
                 be.error.c_str());
    std::abort();
  }
  return 0;
}
