//===- cost/cost.h - Work and traffic of a kernel, and its speed of light -===//
//
// What this owns: `etlc --emit=cost`. From the checked kernel and its task
// graph it derives, per task group and for the whole kernel, as symbolic
// expressions of the dims:
//   tasks      the group's task count (for a range that reads data: its
//              static bound, an upper bound);
//   FLOPs      tile arithmetic, split into tensor-core-eligible work (`dot`
//              of f16/bf16 tiles: 2*M*N*K) and other work (one FLOP per
//              element of every element-wise op, comparison, select, math
//              call, scan and reduction input; casts, loads, stores and
//              shape ops are free). Whole tiles count, edge tiles included;
//              loop bodies count once per iteration;
//   bytes      the minimum DRAM traffic: every element of a tensor the
//              kernel reads is read once, every element it writes is written
//              once (a buffer is written once and read once), counting only
//              as many elements as its tiles move (a KV cache of which the
//              tasks read a part counts that part). Per group the same over
//              its own tiles.
// A count that depends on the task's own index (a loop whose trip count
// reads it, as causal attention's loop up to its query tile does) cannot be
// multiplied by the task count: it is written `sum[GROUP](EXPR)`, the sum of
// EXPR over the group's domain, and evaluated for a binding by enumerating
// the domain (at most 2^24 tasks; beyond that, or with an unbound symbol,
// the value is unknown).
// and, for a binding of the dims and a GPU from cost/gpus.def, the speed of
// light (SOL) time:
//   SOL = max(bytes / HBM bandwidth, FLOPs_tc / tensor peak + FLOPs_other / FP32 peak)
// (SOL-ExecBench's method: a lower bound no schedule can beat).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ast/ast.h"
#include "taskgraph/taskgraph.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace etl {

struct GpuSpec {
  const char *id;
  double hbm_gbps, fp32_tflops, tc16_tflops, tf32_tflops;
  unsigned sms, boost_mhz;
  const char *source;
};

/// Every GPU of cost/gpus.def, in file order.
const std::vector<GpuSpec> &known_gpus();
/// The GPU named `id` ("h100-sxm"), or null.
const GpuSpec *find_gpu(const std::string &id);

/// A sum over a group's domain: what the symbol `sum[GROUP](EXPR)` in a
/// Cost's fields stands for (see the banner).
struct DomainSum {
  Sym per_task;                  ///< EXPR, over the dims and the task's indices
  std::vector<std::string> vars; ///< the domain, as in TaskGroup
  std::vector<Sym> lo, hi;
};

/// A `for` loop of a task body: its source line, nesting depth (0: the
/// body's own), trips per task (the symbol trips@LINE when unknown) and the
/// bytes its body's loads and stores move per trip (inner loops' trips
/// included; not capped at tensor sizes). What the JSON report gives a
/// timing model (cost/timing.h).
struct LoopTrips {
  unsigned line = 0;
  int depth = 0;
  Sym trips, bytes;
};

/// Work and traffic of one group (or of the whole kernel).
struct Cost {
  std::string name;
  Sym tasks;
  Sym flops_tc, flops_other;
  Sym bytes_read, bytes_written;
  std::map<std::string, DomainSum> sums; ///< the sum[...] symbols the fields use
  std::vector<LoopTrips> loops;          ///< the task body's loops, in source order
};

struct KernelCost {
  std::string kernel;
  std::vector<Cost> groups;
  Cost total; ///< tasks and FLOPs summed; bytes: each tensor element once (see above)
};

KernelCost estimate_cost(const KernelDecl &k, const TaskGraph &g);

/// `s` at the dims (and integer tensors' values) in `env`, a sum[...] symbol
/// enumerated over its domain; nullopt when something is unbound.
std::optional<double> eval_cost(const Sym &s, const std::map<std::string, int64_t> &env,
                                const std::map<std::string, DomainSum> &sums);

/// The SOL time in seconds of `c` on `gpu` with the dims in `env`; nullopt
/// when a dim is unbound.
struct Sol {
  double flops_tc, flops_other, bytes, memory_s, compute_s, sol_s;
};
std::optional<Sol> speed_of_light(const Cost &c, const std::map<std::string, int64_t> &env,
                                  const GpuSpec &gpu);

/// The `--emit=cost` report: symbolic always; with `env` (every dim bound)
/// also the values and SOL times on `gpu`. `json`: the same as one JSON
/// object.
std::string print_cost(const KernelCost &kc, const std::map<std::string, int64_t> *env,
                       const GpuSpec &gpu, bool json);

} // namespace etl
