// `graphmend validate TARGET [--fixed FILE|auto|none] [--python PY] [--device auto|cpu|cuda]
//  [--backend inductor|eager] [--repeats N] [--timeout S] [--mode eval|train] [--json] [--report DIR]`
//
// Exit status: 0 validated (and, with a fixed arm, outputs equal); 1 the fixed arm's outputs differ
// from the original's; 2 user code raised, hung past its limit, exited or crashed; 3 usage or
// environment error (bad arguments or target, no python, torch missing or too old); 130 interrupted.
#pragma once

#include <string>
#include <vector>

namespace graphmend::validate {

// `args` excludes the program name and the word "validate".
int run_validate_command(const std::vector<std::string>& args);

}  // namespace graphmend::validate
