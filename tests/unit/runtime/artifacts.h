// The artifacts tests/CMakeLists.txt compiles for the runtime tests
// (tests/unit/runtime/programs/*.etl into artifacts/, the tensor-core probes
// into artifacts/gpu_probes/), built before etl_runtime_tests wherever this
// configuration has an etlc (its own, or ETL_ETLC).
//
// A missing artifact is a counted skip (skip.h: the executable lists the
// reason and exits 77, so ctest reports `runtime` skipped, not passed) only
// where there is no etlc to build it; where there is one it is a failure,
// since the build should have made it (ETL_TEST_HAVE_ETLC).
#pragma once

#include "../skip.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

namespace etl::testartifacts {

/// The path of artifacts/REL.etlb (REL: "data_range", "gpu_probes/probe_mma"),
/// or "" after a skip or a failure saying why it is missing.
inline std::string built(const std::string &rel) {
  std::string path = std::string(ETL_TEST_BINARY_DIR) + "/artifacts/" + rel + ".etlb";
  if (std::ifstream(path).good())
    return path;
  if (ETL_TEST_HAVE_ETLC)
    FAIL_CHECK(path << " is missing, though this configuration has an etlc and builds it before "
                       "etl_runtime_tests (tests/CMakeLists.txt)");
  else
    ETL_TEST_SKIP(path << " not built (no etlc in this configuration: set ETL_ETLC)");
  return "";
}

} // namespace etl::testartifacts
