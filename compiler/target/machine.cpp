//===- target/machine.cpp - A target's machine ----------------------------===//
//
// What this owns: make_machine, the one place a target's kind picks the
// Machine implementation.
//
//===----------------------------------------------------------------------===//
#include "target/machine.h"

namespace etl {

std::unique_ptr<Machine> make_machine(const TargetDesc &t, const MachineOptions &opts,
                                      std::string &error) {
  switch (t.kind) {
  case TargetKind::Sim:
    return make_sim_machine(error);
  case TargetKind::Nvptx:
    return make_nvptx_machine(t.name, opts, error);
  }
  error = std::string("no machine for target '") + t.name + "'";
  return nullptr;
}

} // namespace etl
