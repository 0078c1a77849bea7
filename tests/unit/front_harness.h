//===- tests/unit/front_harness.h - The front half on a source text -------===//
//
// compile_front (driver/pipeline.h) as etlc runs it, on its own stack, with
// what tests ask of the outcome: success, counts by severity, each
// diagnostic, and the rendered text for failure messages.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/pipeline.h"

#include <string>
#include <vector>

namespace etl::testing {

struct FrontResult {
  bool ok = false;
  unsigned errors = 0, warnings = 0;
  std::vector<Diagnostic> diagnostics;
  std::string text; ///< rendered
};

inline FrontResult run_front(const std::string &src, const std::string &name = "test.etl") {
  Compilation c;
  c.file = c.sm.add(name, src);
  FrontResult r;
  r.ok = compile_front(c);
  r.diagnostics = c.diag.diagnostics();
  for (const Diagnostic &d : r.diagnostics) {
    r.errors += d.severity == Severity::Error;
    r.warnings += d.severity == Severity::Warning;
  }
  r.text = c.diag.render();
  return r;
}

} // namespace etl::testing
