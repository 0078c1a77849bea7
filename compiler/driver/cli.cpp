//===- driver/cli.cpp - The etlc command line -----------------------------===//
//
// CLI11 declares every option with its help; this file adds what CLI11
// does not spell like clang (`-Werror`, `-MD`, `-MF` are rewritten to their
// two-dash names before parsing) and turns parse errors into BadCommandLine
// diagnostics rendered like every other diagnostic.
//
//===----------------------------------------------------------------------===//
#include "driver/cli.h"

#include "driver/pipeline.h"
#include "driver/tunables.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <sstream>

namespace etl {
namespace {

std::string emit_help() {
  std::ostringstream os;
  os << "Print one stage's output instead of writing an artifact (to -o FILE when given):";
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

/// The value of `--NAME=V` or `--NAME V` in `args`, the last one given, or
/// `dflt`: how errors found while parsing know the format to render in.
std::string scan_value(const std::vector<std::string> &args, const std::string &name,
                       const std::string &dflt) {
  std::string v = dflt;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind(name + "=", 0) == 0)
      v = args[i].substr(name.size() + 1);
    else if (args[i] == name && i + 1 < args.size())
      v = args[i + 1];
  }
  return v;
}

/// Renders one command-line error in the format the command line asks for
/// (text when that is itself bad).
int usage_error(const std::string &msg, DiagFormat format, bool color, std::ostream &err) {
  SourceManager sm;
  Diag d(sm);
  d.error(DiagId::BadCommandLine, SourceRange(), {msg});
  err << render_diagnostics(d, format, color, ETL_VERSION);
  return kExitUsage;
}

} // namespace

std::string exit_code_help() {
  return "Exit codes:\n"
         "  0  success: the artifact (or the --emit dump) was written\n"
         "  1  the program has errors; the diagnostics say which (under -Werror,\n"
         "     warnings too)\n"
         "  2  usage or I/O error: a bad command line, an unreadable input, an\n"
         "     unwritable output\n"
         "  3  internal compiler error: a bug in etlc, not in the program; please\n"
         "     report it with the program that triggers it\n";
}

int run_cli(const std::vector<std::string> &argv, std::istream &in, std::ostream &out,
            std::ostream &err, bool err_is_terminal, LspEntry lsp) {
  CLI::App app{"etlc: the ETL compiler.\n\n"
               "Compiles a .etl program (tiled tasks and the event tensors between them)\n"
               "ahead of time into one persistent megakernel, packed with the metadata\n"
               "the ETL runtime needs into one artifact file (.etlb).\n\n"
               "Example:\n"
               "  etlc compile examples/rowsum/rowsum.etl -o rowsum.etlb --target sm_90,sim\n"
               "  etlc compile examples/rowsum/rowsum.etl --emit=taskgraph\n"
               "  etlc compile k.etl -o k.etlb -D TM=32 -MD   (also writes k.etlb.d)\n",
               "etlc"};
  app.footer("\n" + exit_code_help());
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());

  CompileOptions opts;
  std::string color = "auto", diag_format = "text";
  CLI::App *compile = app.add_subcommand("compile", "Compile a .etl file to an artifact");
  compile->footer("\n" + exit_code_help());
  compile
      ->add_option("input", opts.input,
                   "The .etl source file, or - to read the program from standard input "
                   "(diagnostics name it <stdin>)")
      ->required();
  compile->add_option("-o,--output", opts.output,
                      "Artifact to write (written atomically); with --emit, the file the dump "
                      "goes to (one target's)");
  compile->add_option("--target", opts.targets, target_help())
      ->delimiter(',')
      ->capture_default_str();
  compile->add_option("--emit", opts.emit, emit_help())->check(CLI::IsMember(emit_names()));
  compile
      ->add_option("-I,--import-dir", opts.import_dirs,
                   "Directory searched for imported modules (`import a.b;` reads "
                   "DIR/a/b.etl), before the stdlib directory " +
                       default_stdlib_dir() + "; repeatable")
      ->allow_extra_args(false);
  compile
      ->add_option("-D,--define", opts.defines,
                   "NAME=VALUE: override the top-level `const NAME` of the program (an "
                   "integer const takes a base-10 integer, a float const a number); repeatable")
      ->allow_extra_args(false);
  compile
      ->add_option("--variant", opts.variants,
                   "CONDITIONS:NAME=VALUE,...: compile the program once more, with these "
                   "const values (applied like -D, after it), for the bindings where the "
                   "CONDITIONS hold, and put every variant in the one artifact; etlRun runs "
                   "the first variant whose conditions hold for the bound dims (no "
                   "recompilation) and refuses a binding none holds for. CONDITIONS: '*' (every "
                   "binding: a last fallback) or DIM<=N, DIM<N, DIM>=N, DIM>N, DIM==N joined "
                   "by ','. Every variant must take the same parameters. Example: --variant "
                   "'B<=1:TK=64' --variant '*:TK=32'; repeatable")
      ->allow_extra_args(false);
  compile->add_flag("--MD", opts.write_deps,
                    "-MD: also write a Makefile dependency file listing the input and every "
                    "imported module (stdlib included), to <output>.d or the -MF file; needs -o");
  compile->add_option("--MF", opts.dep_file,
                      "-MF FILE: write the dependency file to FILE (implies -MD)");
  compile->add_flag("--time-passes", opts.time_passes, "Print the time of every stage");
  compile->add_flag("--Werror", opts.werror,
                    "Treat warnings as errors (exit 1); -Werror also works");
  compile->add_flag("-w", opts.no_warnings, "Print no warnings (nor their notes)");
  compile
      ->add_option("--color", color,
                   "Colour the diagnostics like clang: auto (when stderr is a terminal and "
                   "NO_COLOR is unset or empty), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  compile
      ->add_option("--diagnostics-format", diag_format,
                   "How diagnostics are printed to stderr: text (clang's "
                   "file:line:col: error: ... with the source line and a caret), json (one "
                   "document with kind, severity, message, location and notes of each) or "
                   "sarif (SARIF 2.1.0, one result per error or warning, its notes as "
                   "relatedLocations); command-line and file errors included")
      ->check(CLI::IsMember({"text", "json", "sarif"}))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  compile->add_option("--bind", opts.bind,
                      "--emit=cost: values of every dim, e.g. M=4096,N=4096 (values and SOL "
                      "times are printed only with a binding); an integer tensor parameter "
                      "may be given one too (kv_len=1024): every element the cost reads "
                      "from it takes that value");
  compile->add_option("--gpu", opts.gpu, gpu_help())->capture_default_str();
  compile->add_option("--format", opts.format, "--emit=cost: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  compile->add_option("--threads", opts.threads_per_cta,
                      "Threads per CTA of the megakernel: 32, 64, 128, 256, 512 or 1024 (a "
                      "power-of-two number of warps: tile layouts split over them). "
                      "Default: chosen per target, 256 when the largest tile has at least 2048 "
                      "elements, else 128");
  std::string events = "fine";
  compile
      ->add_option("--events", events,
                   "fine: event edges as written; barrier: the baseline of the same tile code "
                   "with every event wait turned into a whole-group barrier (a group's tasks "
                   "start when every task of each group they wait on is done; a wait on an "
                   "event the group notifies itself stays as written)")
      ->check(CLI::IsMember({"fine", "barrier"}))
      ->capture_default_str();
  compile
      ->add_option("--fmad", opts.fmad,
                   "Contract multiply-add into fused fma on GPU targets (true or false; sim "
                   "never fuses)")
      ->capture_default_str();

  CompileOptions tune_opts;
  CLI::App *tune_cmd = app.add_subcommand(
      "tune", "List the combinations of a program's tunable consts that their constraints "
              "allow, each compiled up to the task graph, and prune those the compiler knows "
              "are bad (shared memory over the targets' budget, a register-spill estimate, any "
              "error), saying why. Ranking the rest is not implemented yet");
  tune_cmd->add_option("input", tune_opts.input, "The .etl source file")->required();
  tune_cmd->add_option("--target", tune_opts.targets, target_help())
      ->delimiter(',')
      ->capture_default_str();
  tune_cmd->add_option("-I,--import-dir", tune_opts.import_dirs, "As for compile")
      ->allow_extra_args(false);
  tune_cmd->add_option("--threads", tune_opts.threads_per_cta, "As for compile");

  LspOptions lsp_opts;
  CLI::App *lsp_cmd = app.add_subcommand(
      "lsp", "Run the language server for editors: the Language Server Protocol on standard "
             "input and output");
  lsp_cmd->footer(
      "\nSpeaks JSON-RPC 2.0 with Content-Length framing (the VS Code extension in\n"
      "editors/vscode starts it; any LSP client can). Offers diagnostics as you type\n"
      "(the checks of `etlc compile --emit=taskgraph`), hover (a tensor's or tile's\n"
      "element type and symbolic shape, its layout, a builtin's signature), go to\n"
      "definition (names, events, buffers, fns of imported modules) and completion of\n"
      "builtins and their keyword arguments. Imports are searched in the -I DIRs, the\n"
      "client's initializationOptions.includePaths, a workspace folder's stdlib/,\n"
      "then the stdlib. Framing problems are logged to standard error.\n\n"
      "Exit codes:\n"
      "  0  the client sent shutdown, then exit\n"
      "  1  exit without shutdown, or the input ended first\n"
      "  2  a bad command line\n");
  lsp_cmd
      ->add_option("-I,--import-dir", lsp_opts.import_dirs,
                   "Directory searched for imported modules, as for compile; repeatable")
      ->allow_extra_args(false);

  // clang spells these with one dash; CLI11 takes multi-letter options with
  // two.
  std::vector<std::string> args = argv;
  for (std::string &a : args)
    if (a == "-Werror" || a == "-MD" || a == "-MF")
      a = "-" + a;
  // Errors found while parsing render in the format asked for, if valid.
  DiagFormat early_format = parse_diag_format(scan_value(args, "--diagnostics-format", "text"))
                                .value_or(DiagFormat::Text);
  bool early_color =
      use_color(scan_value(args, "--color", "auto"), err_is_terminal, std::getenv("NO_COLOR"));
  std::reverse(args.begin(), args.end()); // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) // --help, --version
      return app.exit(e, out, err) == 0 ? kExitOk : kExitUsage;
    return usage_error(e.what(), early_format, early_color, err);
  }
  if (lsp_cmd->parsed()) {
    if (!lsp)
      return usage_error("etlc lsp: this etlc was built without the language server",
                         DiagFormat::Text, false, err);
    return lsp(lsp_opts, in, out, err);
  }
  if (tune_cmd->parsed()) {
    if (tune_cmd->count("--threads") && !valid_threads_per_cta(tune_opts.threads_per_cta))
      return usage_error("--threads " + std::to_string(tune_opts.threads_per_cta) +
                             ": threads per CTA must be 32, 64, 128, 256, 512 or 1024",
                         DiagFormat::Text, false, err);
    return tune(tune_opts, out, err);
  }
  opts.diag_format = *parse_diag_format(diag_format);
  opts.barrier_events = events == "barrier";
  opts.color = use_color(color, err_is_terminal, std::getenv("NO_COLOR"));
  if (compile->count("--threads") &&
      !valid_threads_per_cta(opts.threads_per_cta))
    return usage_error("--threads " + std::to_string(opts.threads_per_cta) +
                           ": threads per CTA must be 32, 64, 128, 256, 512 or 1024 (a "
                           "power-of-two number of whole warps)",
                       opts.diag_format, opts.color, err);
  if (!opts.dep_file.empty())
    opts.write_deps = true;
  if (opts.write_deps && opts.output.empty())
    return usage_error("-MD and -MF need -o FILE (the target of the dependency rule)",
                       opts.diag_format, opts.color, err);
  if (opts.input == "-")
    opts.stdin_text = std::string(std::istreambuf_iterator<char>(in), {});
  return etl::compile(opts, out, err);
}

} // namespace etl
