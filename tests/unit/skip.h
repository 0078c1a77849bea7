// Skipped checks in the doctest executables: a check that cannot run here
// (no ptxas, ...) calls ETL_TEST_SKIP(why) instead of returning silently. The
// reason is printed at once (doctest MESSAGE) and recorded; doctest_main.cpp
// lists the reasons at the end and, when everything that ran passed, exits
// with 77, which ctest's SKIP_RETURN_CODE turns into a real skip (counted in
// scripts/etl.sh's `N passed, M failed, K skipped`).
#pragma once

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

namespace etl::testskip {

/// Every recorded reason, in order (one entry per skipped check).
inline std::vector<std::string> &reasons() {
  static std::vector<std::string> r;
  return r;
}

inline void record(const std::string &why) { reasons().push_back(why); }

} // namespace etl::testskip

/// Prints "SKIPPED: <why>" (a stream expression, like MESSAGE) and records it.
#define ETL_TEST_SKIP(why)                                                                         \
  do {                                                                                             \
    std::ostringstream etl_skip_os_;                                                               \
    etl_skip_os_ << why;                                                                           \
    MESSAGE("SKIPPED: " << etl_skip_os_.str());                                                    \
    etl::testskip::record(etl_skip_os_.str());                                                     \
  } while (0)
