//===- lsp/text.h - LSP positions and file URIs ------------------------------===//
//
// What this owns: the two translations the protocol needs between the
// client's view and the compiler's: an LSP position (0-based line, column
// in UTF-16 code units) to and from a byte offset / SourceLoc (1-based
// line and byte column), and `file://` URIs to and from paths.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/source.h"

#include <llvm/Support/JSON.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace etl::lsp {

/// The byte offset of (line, utf16 character) in `text`; nullopt when the
/// line is past the end or negative. A character past the end of its line
/// is clamped to the line's end, as the protocol asks.
std::optional<uint32_t> offset_of(std::string_view text, int64_t line, int64_t character);

/// The LSP position {line, character} of byte offset `offset` of `text`.
llvm::json::Object position_of(std::string_view text, uint32_t offset);

/// The LSP range of `r` in `text` (the file r points into); an invalid
/// range is the empty range at the start.
llvm::json::Object range_of(std::string_view text, const SourceRange &r);

/// `file:///a%20b/c.etl` -> `/a b/c.etl`; nullopt for other schemes.
std::optional<std::string> uri_to_path(const std::string &uri);
/// An absolute path (made absolute against the working directory) as a
/// `file://` URI, every byte but [A-Za-z0-9-._~/] percent-encoded.
std::string path_to_uri(const std::string &path);

/// The identifier (letters, digits, `_`) around byte `offset` of `text`,
/// and its start; empty when there is none.
std::string_view word_at(std::string_view text, uint32_t offset, uint32_t *start = nullptr);

} // namespace etl::lsp
