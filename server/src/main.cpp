// The `graphmend` executable: dispatches to its subcommands.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli_app.h"
#include "commands.h"
#include "graphmend/analysis/config.h"
#include "graphmend/analysis/torch_version.h"
#include "lsp/server.h"
#include "validate/validate_command.h"

namespace {

constexpr const char* kUsage = R"(graphmend )" GRAPHMEND_VERSION R"( - find and fix torch.compile graph breaks

usage: graphmend <command> [options]

commands:
  check [PATH...]     report graph breaks (--fix, --diff, --output-format ...; see `graphmend check --help`)
  rule CODE           print a rule's documentation (--all, --write-docs DIR)
  config [KEY]        the [tool.graphmend] keys of pyproject.toml (--schema: their JSON Schema)
  server              run the language server on stdio (--log-file FILE, --log-level LEVEL)
  validate TARGET     run original and fixed code under torch.compile and compare (see --help)
  validate --all      a model zoo: every target of a manifest, local pool or Ray, shards, baseline
  validate merge DIR  join zoo shards into one report
  version             print the version, and the torch release whose facts apply here
)";

// The torch release whose facts `check` applies to files of the current folder, and why
// (docs/torch-versions.md): a torch-version in the pyproject.toml that applies, else the installed torch.
std::string torch_facts_here() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path here = fs::current_path(ec);
  graphmend::Config config;
  if (!ec) {
    graphmend::ConfigCache cache;
    auto discovered = cache.discover(here);
    if (discovered.config) config = *discovered.config;
    graphmend::apply_detected_torch(config, graphmend::detect_torch(here, graphmend::EnvironmentContext::current()));
  }
  return config.torch.str() + " (" + config.torch_source + ")";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "check") return graphmend::cli::run_check(rest);
    if (command == "rule") return graphmend::cli::run_rule(rest);
    if (command == "config") return graphmend::cli::run_config(rest);
    if (command == "server") return graphmend::lsp::run_server(rest);
    if (command == "validate") return graphmend::validate::run_validate_command(rest);
    if (command == "version" || command == "--version") {
      // The first line alone, as ruff's, for scripts; the second says which facts `check` applies here.
      std::cout << "graphmend " << GRAPHMEND_VERSION << "\n"
                << "torch facts: " << torch_facts_here() << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "graphmend: internal error: " << e.what() << "\n";
    return 2;
  }
  std::string message = "graphmend: error: unknown command `" + command + "`";
  if (auto match = graphmend::closest_match(command, {"check", "rule", "config", "server", "validate", "version"}))
    message += "\n\n  tip: a similar command exists: `" + *match + "`";
  std::cerr << message << "\n\nFor more information, try 'graphmend --help'.\n";
  return 2;
}
