// Subcommands of the `graphmend` executable; main.cpp dispatches on argv[1].
#pragma once

#include <string>
#include <vector>

namespace graphmend::cli {

int run_check(const std::vector<std::string>& args);     // graphmend check   (check_command.cpp)
int run_rule(const std::vector<std::string>& args);      // graphmend rule    (rule_command.cpp)

}  // namespace graphmend::cli
