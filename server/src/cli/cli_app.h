// Command-line parsing shared by every subcommand (CLI11): one help layout, options that may be
// repeated, errors that name the option and suggest the closest one, exit status 2 for bad usage.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphmend/analysis/text.h"  // closest_match

namespace graphmend::cli {

// A subcommand's parser, e.g. make_app("check", "Report where torch.compile ...").
std::unique_ptr<CLI::App> make_app(const std::string& command, const std::string& description);

// Parses `args` (the words after the subcommand). Returns the exit status to stop with (0 after
// printing --help to stdout, 2 after printing a usage error to stderr), or nullopt to go on.
// `usage_status`: the exit status of a usage error (2, except `validate`, whose 2 means user code failed).
std::optional<int> parse_command_line(CLI::App& app, const std::vector<std::string>& args, int usage_status = 2);

// Prints a usage error the way parse_command_line does ("graphmend check: error: ..."), returns `status`.
int usage_error(const CLI::App& app, const std::string& message, int status = 2);

// Option checks in the CLI's own words: a whole number in [low, high], a positive finite number of seconds.
CLI::Validator whole_number(int low, int high, const std::string& name);
CLI::Validator positive_seconds(const std::string& name);

}  // namespace graphmend::cli
