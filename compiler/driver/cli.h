//===- driver/cli.h - The etlc command line -------------------------------===//
//
// What this owns: parsing etlc's command line (CLI11) into CompileOptions,
// clang's spellings (-Werror, -MD, -MF, -D, `-` for stdin), --help with the
// exit codes, --version, and routing command-line errors through the
// diagnostics so that --diagnostics-format=json|sarif output stays one
// valid document. main() is run_cli on the process's streams; tests call it
// in process.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace etl {

/// `etlc lsp`'s command line: `-I DIR`s searched for imported modules.
struct LspOptions {
  std::vector<std::string> import_dirs;
};
/// The language server (compiler/lsp/lsp.h, serve_lsp): it sits above the
/// driver, so the executable hands it to run_cli (driver/main.cpp).
using LspEntry = int (*)(const LspOptions &opts, std::istream &in, std::ostream &out,
                         std::ostream &err);

/// `etlc` with `args` (argv without argv[0]). `in` is read for input `-`
/// (and by `etlc lsp`); `err_is_terminal` decides --color=auto (with
/// NO_COLOR); `lsp` runs `etlc lsp` (null: a usage error saying this etlc
/// has no language server). Returns the exit code (ExitCode of
/// driver/pipeline.h).
int run_cli(const std::vector<std::string> &args, std::istream &in, std::ostream &out,
            std::ostream &err, bool err_is_terminal, LspEntry lsp = nullptr);

/// The exit-code table that ends `etlc --help` (and is copied in README.md).
std::string exit_code_help();

} // namespace etl
