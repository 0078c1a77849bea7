//===- tests/unit/lower/backend_harness.h - run_backend with its tile IR ---===//
//
// The back end lowers every task body from its tile IR; tests that drive
// run_backend in process build that IR the way the driver does
// (lowering_tiles) before calling it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/pipeline.h"
#include "lower/backend.h"

#include <string>
#include <vector>

namespace etl::testing {

/// run_backend on `c` (after compile_front) for `targets`, with the tile IR
/// at opts.threads_per_cta threads per CTA.
inline BackendResult lower_compiled(Compilation &c, const std::vector<std::string> &targets,
                                    BackendOptions opts = {}) {
  if (!valid_threads_per_cta(opts.threads_per_cta)) // run_backend says why
    return run_backend(*c.program, c.program->kernels[0], c.graph, targets, opts);
  std::string error;
  std::optional<TileModule> tiles = lowering_tiles(c, opts.threads_per_cta, error);
  if (!tiles) {
    BackendResult r;
    r.error = "tile IR " + error;
    return r;
  }
  opts.tiles = &*tiles;
  return run_backend(*c.program, c.program->kernels[0], c.graph, targets, opts);
}

} // namespace etl::testing
