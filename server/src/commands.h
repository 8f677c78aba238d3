// Subcommands of the `graphmend` executable; main.cpp dispatches on argv[1].
#pragma once

#include <string>
#include <vector>

#include "graphmend/analysis/finding.h"

namespace graphmend::cli {

int run_check(const std::vector<std::string>& args);   // graphmend check   (check_command.cpp)
int run_rule(const std::vector<std::string>& args);    // graphmend rule    (rule_command.cpp)
int run_config(const std::vector<std::string>& args);  // graphmend config  (config_command.cpp)
// Markdown page of a rule (used by `graphmend rule` and hovers).
std::string rule_markdown(const RuleInfo& rule);

}  // namespace graphmend::cli
