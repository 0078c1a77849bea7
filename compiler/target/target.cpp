//===- target/target.cpp - The target table, from targets.def -------------===//
#include "target/target.h"

#include <algorithm>

namespace etl {

const std::vector<TargetDesc> &all_targets() {
  static const std::vector<TargetDesc> targets = {
#define ETL_TARGET(NAME, KIND, SM, PTX, SMEM_LIMIT, REGS_PER_SM, REGS_PER_THREAD, WIDE_TILE, WHAT) \
  {NAME, TargetKind::KIND, SM, PTX, SMEM_LIMIT, REGS_PER_SM, REGS_PER_THREAD, WIDE_TILE, WHAT},
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

bool target_has_wgmma(const TargetDesc &t) {
  const std::string n = t.name;
  return t.kind == TargetKind::Nvptx && t.sm == 90 && !n.empty() && n.back() == 'a';
}

TargetInfo target_info(const std::vector<std::string> &targets) {
  TargetInfo info;
  bool gpu = false, all = true;
  unsigned largest = 0;
  for (const TargetDesc &t : all_targets())
    largest = std::max(largest, t.smem_limit);
  for (const std::string &name : targets)
    if (const TargetDesc *t = find_target(name)) {
      info.targets.push_back(t);
      info.tma = info.tma || has_tma(*t);
      if (t->kind == TargetKind::Nvptx)
        gpu = true, all = all && target_has_wgmma(*t);
      if (t->smem_limit != 0 && (info.smem_budget == 0 || t->smem_limit < info.smem_budget))
        info.smem_budget = t->smem_limit;
    }
  if (info.smem_budget == 0)
    info.smem_budget = largest;
  info.wgmma = gpu && all;
  return info;
}

TargetInfo every_target_info() {
  std::vector<std::string> names;
  for (const TargetDesc &t : all_targets())
    names.push_back(t.name);
  TargetInfo info = target_info(names);
  info.tma = false;
  return info;
}

bool has_tma(const TargetDesc &t) {
  const std::string n = t.name;
  return t.kind == TargetKind::Nvptx && t.sm >= 90 && !n.empty() && n.back() == 'a';
}

unsigned TargetInfo::register_limit(unsigned threads, std::string *which) const {
  unsigned limit = 0;
  for (const TargetDesc *t : targets)
    if (unsigned r = etl::register_limit(*t, threads); r && (!limit || r < limit)) {
      limit = r;
      if (which)
        *which = t->name;
    }
  return limit;
}

unsigned default_threads(const TargetDesc &t, long long largest_tile) {
  return t.wide_tile != 0 && largest_tile >= (long long)t.wide_tile ? 256u : 128u;
}

unsigned register_limit(const TargetDesc &t, unsigned threads) {
  if (t.regs_per_sm == 0)
    return 0;
  unsigned per = t.regs_per_sm / std::max(threads, 1u) / 8u * 8u;
  return std::min(t.regs_per_thread, per);
}

} // namespace etl
