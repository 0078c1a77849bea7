//===- driver/time.h - --emit=cost and --emit=time ------------------------===//
//
// What this owns: the two reports of a binding: `--emit=cost` (work,
// traffic, speed of light; cost/cost.h) and `--emit=time` (the timing
// model; cost/timing.h), and the one parser of `--bind` they share.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/pipeline.h"

#include <map>
#include <optional>
#include <ostream>
#include <string>

namespace etl {

struct GpuSpec;

/// `--bind` against kernel k's dims (and integer tensors, each element read
/// as the value): the values, or nullopt after reporting why. `need_all`:
/// an empty binding is an error too (--emit=time).
std::optional<std::map<std::string, int64_t>> parse_binding(const CompileOptions &opts,
                                                            const KernelDecl &k, Diag &diag,
                                                            bool need_all);
/// The GPU of --gpu, or null after reporting it unknown.
const GpuSpec *pick_gpu(const CompileOptions &opts, Diag &diag);

/// ptxas from /usr/local/cuda/bin, $CUDA_HOME/bin or PATH; "" when none.
std::string find_ptxas();

/// ptxas (-v) on the PTX file `ptx_path` for `arch`, keeping its cubin: its
/// -v text, and the static SASS instructions of the cubin (the `.text.*`
/// sections' bytes / 16: sm_90 and sm_80 encode each in 16 bytes), 0 when
/// ptxas failed or the cubin could not be read.
struct PtxasRun {
  std::string text;
  double sass = 0;
};
PtxasRun run_ptxas(const std::string &ptxas, const std::string &ptx_path, const std::string &arch);

int emit_cost(const CompileOptions &opts, const Program &p, std::ostream &out, Diag &diag,
              const TaskGraph &g);
/// `ptx`: the code of the GPU target the model reads.
int emit_time(const CompileOptions &opts, const Program &p, const TaskGraph &g,
              const std::string &ptx, std::ostream &out, Diag &diag);

} // namespace etl
