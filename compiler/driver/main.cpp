//===- driver/main.cpp - The etlc executable -------------------------------===//
//
// What this owns: nothing but handing the process's arguments and streams
// to run_cli (driver/cli.h), where the command line is parsed, with the
// language server (compiler/lsp, a stage above the driver) for `etlc lsp`.
//
//===----------------------------------------------------------------------===//
#include "driver/cli.h"
#include "lsp/lsp.h"

#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return etl::run_cli(args, std::cin, std::cout, std::cerr, isatty(STDERR_FILENO) != 0,
                      etl::serve_lsp);
}
