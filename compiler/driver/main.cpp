//===- driver/main.cpp - The etlc command line -----------------------------===//
//
// What this owns: parsing the command line (CLI11) into CompileOptions and
// calling the pipeline. Nothing else lives here.
//
//===----------------------------------------------------------------------===//
#include "driver/pipeline.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include <iostream>
#include <sstream>

namespace {

std::string emit_help() {
  std::ostringstream os;
  os << "Print one stage's output instead of writing an artifact:";
#define ETL_EMIT_HELP(NAME, DOC) os << "\n  " << #NAME << ": " << DOC;
  ETL_EMIT_KINDS(ETL_EMIT_HELP)
#undef ETL_EMIT_HELP
  return os.str();
}

std::vector<std::string> emit_names() {
  return {
#define ETL_EMIT_NAME(NAME, DOC) #NAME,
      ETL_EMIT_KINDS(ETL_EMIT_NAME)
#undef ETL_EMIT_NAME
  };
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"etlc: the ETL compiler.\n\n"
               "Compiles a .etl program (tiled tasks and the event tensors between them)\n"
               "ahead of time into one persistent megakernel, packed with the metadata\n"
               "the ETL runtime needs into one artifact file (.etlb).\n\n"
               "Example:\n"
               "  etlc compile examples/rowsum/rowsum.etl -o rowsum.etlb --target sm_90,sim\n"
               "  etlc compile examples/rowsum/rowsum.etl --emit=taskgraph\n\n"
               "Exit codes: 0 success; 1 the program has errors (see the diagnostics);\n"
               "2 usage or I/O error; 3 internal compiler error (a bug in etlc: please\n"
               "report it with the program that triggers it).\n",
               "etlc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", etl::version_text());

  etl::CompileOptions opts;
  CLI::App *compile = app.add_subcommand("compile", "Compile a .etl file to an artifact");
  compile->add_option("input", opts.input, "The .etl source file")->required();
  compile->add_option("-o,--output", opts.output,
                      "Artifact to write (written atomically); with --emit, the file the dump "
                      "goes to (one target's)");
  compile->add_option("--target", opts.targets, etl::target_help())
      ->delimiter(',')
      ->capture_default_str();
  compile->add_option("--emit", opts.emit, emit_help())->check(CLI::IsMember(emit_names()));
  compile
      ->add_option("-I,--import-dir", opts.import_dirs,
                   "Directory searched for imported modules (`import a.b;` reads "
                   "DIR/a/b.etl), before the stdlib directory " +
                       etl::default_stdlib_dir() + "; repeatable")
      ->allow_extra_args(false);
  compile->add_flag("--time-passes", opts.time_passes, "Print the time of every stage");
  compile->add_flag("--Werror", opts.werror,
                    "Treat warnings as errors (exit 1); -Werror also works");
  compile->add_flag("-w", opts.no_warnings, "Print no warnings (nor their notes)");
  compile->add_option("--bind", opts.bind,
                      "--emit=cost: values of every dim, e.g. M=4096,N=4096 (values and SOL "
                      "times are printed only with a binding)");
  compile
      ->add_option("--gpu", opts.gpu,
                   "--emit=cost: the GPU whose peaks give the speed of light: h100-sxm, h200, "
                   "a100-sxm, b200, rtx4090")
      ->capture_default_str();
  compile->add_option("--format", opts.format, "--emit=cost: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  compile
      ->add_option("--threads", opts.threads_per_cta,
                   "Threads per CTA of the megakernel (a multiple of 32)")
      ->check(CLI::Range(32u, 1024u))
      ->capture_default_str();

  // clang spells it -Werror; CLI11 takes multi-letter options with two dashes.
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::string &a : args)
    if (a == "-Werror")
      a = "--Werror";
  std::reverse(args.begin(), args.end()); // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (opts.threads_per_cta % 32 != 0) {
    std::cerr << "etlc: error: --threads must be a multiple of 32\n";
    return 2;
  }
  try {
    return etl::compile(opts, std::cout, std::cerr);
  } catch (const std::exception &e) {
    // No stage throws on a bad program; an exception escaping one is a bug.
    std::cerr << "etlc: internal compiler error: " << e.what() << "\n"
              << "etlc: this is a bug in etlc, not in your program; please report this with "
                 "the program that triggers it\n";
    return etl::kExitInternalError;
  }
}
