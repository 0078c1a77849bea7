//===- artifact/artifact.h - Writing .etlb artifacts ------------*- C++ -*-===//
//
// The writer side of the artifact format in runtime/abi/etl_abi.h: a plain
// mirror of the metadata encoding (ArtifactMeta), its serialization together
// with the code sections, and an atomic file write. The runtime's reader
// (runtime/src/artifact.c) is the other half; tests/unit/artifact
// round-trips one through the other.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "etl_abi.h"

namespace etl {

/// Expression bytecode (etl_abi.h section 2): postfix ETL_XOP_* words.
using ArtifactExpr = std::vector<int64_t>;

struct ArtifactDim {
  std::string name;
  uint32_t slot = 0;
};

struct ArtifactTensor {
  std::string name;
  uint32_t elem = ETL_ELEM_F32;
  bool is_buffer = false;          ///< runtime-allocated intermediate, not a parameter
  std::vector<ArtifactExpr> shape; ///< one expr per dimension (rank = size)
  uint32_t slot = 0;
  bool zeros = false; ///< a buffer the runtime clears before each run (= zeros)
  /// A parameter no task stores to or updates atomically (ETL_TENSOR_INPUT):
  /// read-only memory may be bound to it.
  bool read_only = false;
};

/// A scalar parameter: its value's bits go in the low bytes of `slot`.
struct ArtifactScalar {
  std::string name;
  uint32_t elem = ETL_ELEM_F32;
  uint32_t slot = 0;
};

struct ArtifactConstraint {
  ArtifactExpr cond;
  std::string text;  ///< source text, e.g. "D % 64 == 0"
  std::string where; ///< "file:line:col"
};

struct ArtifactEvent {
  std::string name;
  std::vector<ArtifactExpr> shape;
  uint32_t slot = 0;
};

struct ArtifactIndex {
  /// 0: `idx`; 1 (`*`): every index along this dimension; 2: reads tensor
  /// data, evaluated on the device (`idx` unused unless 0).
  uint32_t star = 0;
  ArtifactExpr idx;
};

struct ArtifactEdge {
  uint32_t event = 0;
  std::vector<ArtifactIndex> index; ///< one per event dimension
};

struct ArtifactGroup {
  std::string name;
  std::vector<std::pair<ArtifactExpr, ArtifactExpr>> domain; ///< [lo, hi) per variable
  std::vector<ArtifactEdge> notifies, waits;
  uint32_t schedule = ETL_SCHEDULE_STATIC;
  uint32_t data_var = ETL_NO_DATA_VAR; ///< the variable whose range reads data
  uint32_t layer_block = ETL_NO_LAYER_BLOCK; ///< or k >= 1: in layered block k
};

/// A tensor map the runtime encodes for TMA copies (v9).
struct ArtifactTmaMap {
  uint32_t tensor = 0, slot = 0;
  std::vector<uint32_t> box; ///< elements, outermost first (rank = size)
};

/// Everything the metadata section holds, in its order.
struct ArtifactMeta {
  uint32_t threads_per_cta = 128;
  uint32_t smem_bytes = 0;
  std::string kernel_name = ETL_KERNEL_ENTRY;
  std::string source_path;
  uint32_t num_slots = ETL_SLOT_FIRST_PROGRAM;
  std::vector<ArtifactDim> dims;
  std::vector<ArtifactTensor> tensors;
  std::vector<ArtifactScalar> scalars;
  std::vector<ArtifactConstraint> constraints;
  std::vector<ArtifactEvent> events;
  std::vector<ArtifactGroup> groups;
  std::vector<uint32_t> order; ///< group indices in a topological order
  std::vector<ArtifactTmaMap> tma_maps;
};

/// Encode the metadata section alone.
std::string serialize_meta(const ArtifactMeta &meta);

/// The whole artifact file: header, section table, metadata, then one code
/// section per (target, bytes) pair ("sim": ELF object; "sm_90": PTX text,
/// a NUL is appended if missing).
std::string serialize_artifact(const ArtifactMeta &meta,
                               const std::vector<std::pair<std::string, std::string>> &code);

/// One variant of an artifact of several (etl_abi.h): a whole artifact
/// from serialize_artifact, the binding range it is for and its label.
struct ArtifactVariant {
  struct Range {
    std::string dim;
    int64_t lo = 0, hi = 0; ///< inclusive
  };
  std::string label; ///< "B<=1:TK=64"
  std::vector<Range> ranges;
  std::string artifact;
};

/// An artifact of several variants: the variant table, then each variant's
/// artifact as a section of its own.
std::string serialize_variants(const std::vector<ArtifactVariant> &variants);

/// Write `bytes` to `path` through a temporary file in the same directory,
/// fsync'ed and renamed over `path`: readers see the old file or the new
/// one, never half of one. On failure returns false with `err` set and
/// leaves no temporary behind.
bool write_file_atomically(const std::string &path, const std::string &bytes, std::string &err);

} // namespace etl
