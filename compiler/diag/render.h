//===- diag/render.h - Diagnostics as text, JSON or SARIF -----------------===//
//
// What this owns: `--diagnostics-format`. One call renders all of a
// compilation's diagnostics in one of three forms:
//
//   text   clang's form (Diag::render), optionally coloured (`--color`)
//   json   one JSON document: {"diagnostics": [...], "errors": N, "warnings": N};
//          each error or warning has kind, severity, message, location and
//          its notes (same fields, nested)
//   sarif  one SARIF 2.1.0 log for CI: one run of tool `etlc` whose rules
//          are the diagnostic kinds used, notes as relatedLocations
//
// A diagnostic without a source location (a command-line or file error)
// has no location in json/sarif, so every output stays one valid document.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "diag/diag.h"

#include <optional>
#include <string>

namespace etl {

enum class DiagFormat { Text, Json, Sarif };

/// "text", "json" or "sarif"; nullopt for anything else.
std::optional<DiagFormat> parse_diag_format(const std::string &s);

/// Every diagnostic of `d` in `format`. Text with no diagnostics is empty;
/// json and sarif always give one document (ending in a newline).
/// `tool_version` goes into SARIF's tool.driver.version.
std::string render_diagnostics(const Diag &d, DiagFormat format, bool color,
                               const std::string &tool_version);

/// `--color=auto|always|never`: auto is on when stderr is a terminal and
/// NO_COLOR (https://no-color.org) is unset or empty.
bool use_color(const std::string &mode, bool stderr_is_terminal, const char *no_color_env);

} // namespace etl
