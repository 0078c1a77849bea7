//===- tests/fuzz/fuzz_frontend.cpp - libFuzzer harness: the front end ----===//
//
// Harness (a): the input is ETL source text. It runs the front half of the
// pipeline exactly as `etlc compile` does (parse, imports, inline, sema,
// task graph, schedule) and renders the diagnostics. Any crash, sanitizer
// report, uncaught exception or hang is a finding; a program that is merely
// wrong must end in diagnostics.
//
// Built with -fsanitize=fuzzer in build-asan/ when the compiler is clang
// (tests/fuzz/CMakeLists.txt); run by scripts/etl.sh test and scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  etl::Compilation c;
  c.file = c.sm.add("fuzz.etl", std::string(reinterpret_cast<const char *>(data), size));
  etl::compile_front(c);
  std::string rendered = c.diag.render();
  (void)rendered;
  return 0;
}
