// The one doctest main shared by the unit-test executables. Exit status: 0 all
// passed, 77 everything that ran passed but some checks were skipped
// (ETL_TEST_SKIP in skip.h; ctest's SKIP_RETURN_CODE), else doctest's own.
#define DOCTEST_CONFIG_IMPLEMENT
#include "skip.h"

#include <cstdio>
#include <map>

int main(int argc, char **argv) {
  doctest::Context context(argc, argv);
  int rc = context.run();
  if (context.shouldExit())
    return rc;
  const auto &why = etl::testskip::reasons();
  if (why.empty())
    return rc;
  std::map<std::string, int> counts; // one line per distinct reason
  for (const auto &w : why)
    counts[w]++;
  std::printf("%zu check(s) skipped:\n", why.size());
  for (const auto &[w, n] : counts)
    std::printf("  skipped (%dx): %s\n", n, w.c_str());
  return rc == 0 ? 77 : rc;
}
