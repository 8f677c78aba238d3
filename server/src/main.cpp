// The `graphmend` executable: dispatches to its subcommands.
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "lsp/server.h"
#include "validate/validate_command.h"

namespace {

constexpr const char* kUsage = R"(graphmend )" GRAPHMEND_VERSION R"( - find and fix torch.compile graph breaks

usage: graphmend <command> [options]

commands:
  check [PATH...]     report graph breaks (--fix, --diff, --output-format ...; see `graphmend check --help`)
  rule CODE           print a rule's documentation (--all, --write-docs DIR)
  server              run the language server on stdio (--log-file FILE, --log-level LEVEL)
  validate TARGET     run original and fixed code under torch.compile and compare (see --help)
  version             print the version
)";

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
    if (command == "server") return graphmend::lsp::run_server(rest);
    if (command == "validate") return graphmend::validate::run_validate_command(rest);
    if (command == "version" || command == "--version") {
      std::cout << "graphmend " << GRAPHMEND_VERSION << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "graphmend: internal error: " << e.what() << "\n";
    return 2;
  }
  std::cerr << "graphmend: unknown command `" << command << "`\n\n" << kUsage;
  return 2;
}
