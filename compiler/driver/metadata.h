//===- driver/metadata.h - What the runtime needs to know -----------------===//
//
// What this owns: turning the checked kernel and its task graph into the
// artifact's metadata (artifact/artifact.h): dims, tensors and buffers with
// their shapes, `where` constraints with their source text, event tensors,
// groups with domains and edges, the group order, and the argument-block
// slots. Index expressions become the runtime's postfix bytecode
// (runtime/abi/etl_abi.h, section 2).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "artifact/artifact.h"
#include "ast/ast.h"
#include "lower/backend.h"
#include "taskgraph/taskgraph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etl {

/// Postfix bytecode of an index or condition expression. `vars` names the
/// domain variables VAR k refers to (empty outside a task).
std::vector<int64_t> expr_bytecode(const Expr &e, const Program &p,
                                   const std::vector<std::string> &vars = {});

ArtifactMeta build_metadata(const Program &p, const KernelDecl &k, const TaskGraph &g,
                            const BackendResult &be, const SourceManager &sm);

} // namespace etl
