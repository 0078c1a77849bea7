//===- target/target.cpp - The target table, from targets.def -------------===//
#include "target/target.h"

namespace etl {

const std::vector<TargetDesc> &all_targets() {
  static const std::vector<TargetDesc> targets = {
#define ETL_TARGET(NAME, KIND, SMEM_LIMIT, WHAT) {NAME, TargetKind::KIND, SMEM_LIMIT, WHAT},
#include "target/targets.def"
  };
  return targets;
}

const TargetDesc *find_target(const std::string &name) {
  for (const TargetDesc &t : all_targets())
    if (name == t.name)
      return &t;
  return nullptr;
}

std::string target_names() {
  const std::vector<TargetDesc> &ts = all_targets();
  std::string r;
  for (size_t i = 0; i < ts.size(); ++i)
    r += (i == 0 ? "" : i + 1 == ts.size() ? " or " : ", ") + std::string(ts[i].name);
  return r;
}

unsigned portable_smem_limit() {
  unsigned limit = 0;
  for (const TargetDesc &t : all_targets())
    if (t.smem_limit != 0 && (limit == 0 || t.smem_limit < limit))
      limit = t.smem_limit;
  return limit;
}

} // namespace etl
