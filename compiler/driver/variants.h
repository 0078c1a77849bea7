//===- driver/variants.h - `--variant`: one artifact, several variants ----===//
//
// What this owns: `etlc compile k.etl -o k.etlb --variant 'B<=1:TK=64'
// --variant '*:TK=32'`. Each SPEC is CONDITIONS:VALUES. CONDITIONS is `*`
// (every binding) or DIM<=N, DIM<N, DIM>=N, DIM>N, DIM==N joined by `,`
// (all must hold; several on one dim intersect); VALUES is NAME=VALUE
// joined by `,` (may be empty), applied like -D after the command line's
// -D. The pipeline (driver/pipeline.cpp, compile_variants) compiles the
// program once per SPEC and writes one artifact of several variants
// (etl_abi.h); the runtime runs, per binding, the first variant whose
// conditions hold, and refuses a binding none holds for.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "artifact/artifact.h"
#include "ast/ast.h"
#include "diag/diag.h"

#include <string>
#include <vector>

namespace etl {

struct VariantSpec {
  std::string text;
  std::vector<ArtifactVariant::Range> ranges; ///< one per dim named, inclusive
  std::vector<std::string> defines;           ///< NAME=VALUE
};

/// Parses `text`; false with `why` (a phrase) when it is malformed.
bool parse_variant(const std::string &text, VariantSpec &out, std::string &why);

/// Whether every dim `v` names is a dim of `k` (else VariantUnknownDim).
bool check_variant_dims(const VariantSpec &v, const KernelDecl &k, Diag &diag);

/// What differs between the parameters two variants take (empty: nothing):
/// dims, tensor parameters (name, element type, kind, shape) and scalars.
std::string interface_mismatch(const ArtifactMeta &first, const ArtifactMeta &other);

/// Whether `id` is a command-line error of --variant (exit 2).
bool is_variant_usage_error(DiagId id);

} // namespace etl
