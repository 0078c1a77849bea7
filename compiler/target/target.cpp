//===- target/target.cpp - The target table, from targets.def -------------===//
#include "target/target.h"

#include <algorithm>

namespace etl {

const std::vector<TargetDesc> &all_targets() {
  static const std::vector<TargetDesc> targets = {
#define ETL_TARGET(NAME, KIND, SMEM_LIMIT, WIDE_TILE, WHAT)                                        \
  {NAME, TargetKind::KIND, SMEM_LIMIT, WIDE_TILE, WHAT},
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

unsigned smem_limit_for(const std::vector<std::string> &targets) {
  unsigned limit = 0, largest = 0;
  for (const TargetDesc &t : all_targets())
    largest = std::max(largest, t.smem_limit);
  for (const std::string &name : targets)
    if (const TargetDesc *t = find_target(name))
      if (t->smem_limit != 0 && (limit == 0 || t->smem_limit < limit))
        limit = t->smem_limit;
  return limit != 0 ? limit : largest;
}

unsigned default_threads(const TargetDesc &t, long long largest_tile) {
  return t.wide_tile != 0 && largest_tile >= (long long)t.wide_tile ? 256u : 128u;
}

unsigned register_limit(const TargetDesc &t, unsigned threads) {
  if (t.kind != TargetKind::Nvptx)
    return 0;
  unsigned per = 65536u / std::max(threads, 1u) / 8u * 8u;
  return std::min(255u, per);
}

} // namespace etl
