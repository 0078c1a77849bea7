//===- tile/smem_layout.cpp - Shared-memory layouts: staging and bank checks -===//
//
// What this owns: the shared-memory layouts (SmemLayout, tile/layout.h)
// the lowering addresses, as data: a tensor-core dot's operand staging
// (mma_staging_layout: 16-bit, and a tf32 dot's f32 with its phase
// rotated) and the scratch of re-layouts and the FMA dot
// (scratch_smem_layout), both affine (a row pitch, then a 16-byte chunk
// XORed by the row's phase), evaluated by tile/layout.h's smem_place on
// host integers here and on LLVM IR values by the lowering
// (lower/lower_mma_smem.cpp's smem_offset); their printing; and the bank
// check (smem_wavefronts) over the linear or the affine part. The linear
// part's constructors (row_major_smem_layout, swizzled_smem_layout) are in
// tile/layout.cpp with the other F2 maps.
//
//===----------------------------------------------------------------------===//
#include "tile/layout.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace etl {

std::string SmemLayout::str() const {
  std::string s = "smem<";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  s += " vec=" + std::to_string(vec) + " per_phase=" + std::to_string(per_phase) +
       " max_phase=" + std::to_string(max_phase) + " offset=[";
  unsigned lo = lg.size() == 2 ? lg[1] : 0;
  for (size_t i = 0; i < offset.size(); ++i) {
    uint32_t b = offset[i];
    s += i ? "," : "";
    s += lg.size() == 2
             ? "(" + std::to_string(b >> lo) + "," + std::to_string(b & ((1u << lo) - 1)) + ")"
             : std::to_string(b);
  }
  s += "]";
  if (row_bytes) // the affine part
    s += std::string(lines ? " lines=" : " row_bytes=") + std::to_string(row_bytes) +
         " elem_bytes=" + std::to_string(elem_bytes) +
         (rotate ? " rotate=" + std::to_string(rotate) : std::string()) +
         (block_bytes ? " block_bytes=" + std::to_string(block_bytes) : std::string());
  return s + ">";
}

SmemLayout mma_staging_layout(int64_t cols, unsigned elem_bytes) {
  SmemLayout s;
  s.shape = {cols}; // of any number of rows
  s.elem_bytes = elem_bytes;
  s.vec = 16 / elem_bytes;
  s.row_bytes = cols * elem_bytes;
  const int64_t chunks = s.row_bytes / 16;
  unsigned max_phase = 1; // the largest power of two dividing chunks, at most 8
  while (max_phase < 8 && chunks % (2 * max_phase) == 0)
    max_phase *= 2;
  s.max_phase = max_phase;
  if (elem_bytes == 4) {
    s.per_phase = 8 / max_phase;
    s.rotate = 1;
  } else {
    s.per_phase = s.row_bytes >= 128 ? 1 : unsigned(128 / s.row_bytes);
  }
  return s;
}

SmemLayout wgmma_staging_layout(int64_t rows, int64_t cols) {
  const int64_t rb = 2 * cols;
  const int64_t w = rb % 128 == 0 ? 128 : rb == 64 || rb == 32 ? rb : 0;
  if (!w || rows <= 0)
    return mma_staging_layout(cols, 2);
  SmemLayout s;
  s.shape = {cols};
  s.elem_bytes = 2;
  s.vec = 8;
  s.row_bytes = w;
  s.max_phase = unsigned(w / 16);
  s.per_phase = unsigned(128 / w);
  s.block_bytes = rb > w ? rows * w : 0;
  return s;
}

SmemLayout scratch_smem_layout(unsigned elem_bytes) {
  SmemLayout s;
  s.elem_bytes = elem_bytes;
  s.vec = 16 / elem_bytes;
  s.row_bytes = 128;
  s.lines = true;
  s.per_phase = 1;
  s.max_phase = 8;
  return s;
}

unsigned smem_wavefronts(const SmemLayout &s, const std::vector<uint32_t> &coords, unsigned vec,
                         unsigned elem_bytes) {
  // coord -> offset (the linear part is a bijection on the padded tile).
  std::map<uint32_t, uint32_t> where;
  unsigned bits = unsigned(s.offset.size());
  if (!s.row_bytes)
    for (uint32_t off = 0; off < (1u << bits); ++off)
      where[s.apply(off)] = off;
  SmemInt a;
  auto byte_of = [&](uint32_t c) -> uint32_t {
    if (!s.row_bytes)
      return where[c] * elem_bytes;
    if (s.lines)
      return uint32_t(smem_place(a, s, 0, c)) * elem_bytes;
    const int64_t cols = s.shape.empty() ? 1 : s.shape.back();
    return uint32_t(smem_place(a, s, int64_t(c) / cols, int64_t(c) % cols));
  };
  unsigned access_bytes = vec * elem_bytes;
  unsigned lanes_per_phase = std::max(1u, 128u / std::max(1u, access_bytes));
  unsigned total = 0;
  for (size_t p = 0; p < coords.size(); p += lanes_per_phase) {
    std::map<unsigned, std::unordered_set<uint32_t>> words; // bank -> distinct words
    for (size_t i = p; i < coords.size() && i < p + lanes_per_phase; ++i) {
      uint32_t byte = byte_of(coords[i]);
      for (unsigned w = 0; w < std::max(1u, access_bytes / 4); ++w) {
        uint32_t word = byte / 4 + w;
        words[word % 32].insert(word);
      }
    }
    unsigned worst = 1;
    for (const auto &kv : words)
      worst = std::max(worst, unsigned(kv.second.size()));
    total += worst;
  }
  return total;
}

} // namespace etl
