// The skip mechanism of unit/skip.h itself: ctest `doctest_skip_exit` runs this
// case alone with ETL_TEST_SKIP_SELFTEST=1 and expects exit 77 and the reason
// listed (tests/CMakeLists.txt); in a normal run it checks nothing is recorded.
#include "../skip.h"

#include <doctest/doctest.h>

#include <cstdlib>

TEST_CASE("skip.h: ETL_TEST_SKIP records a reason (selftest)") {
  if (std::getenv("ETL_TEST_SKIP_SELFTEST")) {
    ETL_TEST_SKIP("selftest " << 42);
    CHECK(etl::testskip::reasons().back() == "selftest 42");
  }
}
