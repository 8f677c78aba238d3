// `graphmend validate --all [--targets FILE] [--report DIR] [--shard I/N] [--need all|cpu|gpu] [--jobs N]
//  [--ray [ADDRESS]] [--baseline FILE [--update-baseline]] ...` and `graphmend validate merge DIR... --report OUT`.
//
// This side reads the manifest (a zoo TOML file, or [tool.graphmend] validate) with positions in its
// errors, writes it as JSON into the results folder, and replaces itself (exec) with the zoo driver in
// the discovered interpreter: `python -m graphmend_validator zoo run|merge` (gpu-validator/.../zoo),
// which runs each item as a `graphmend validate` of this same executable. Exit status: the driver's
// (docs/validator.md, "Model zoo").
#pragma once

#include <string>
#include <vector>

namespace graphmend::validate {

// True when `args` (after the word "validate") ask for the zoo: `--all` anywhere, or `merge` first.
bool is_zoo_command(const std::vector<std::string>& args);

int run_zoo_command(const std::vector<std::string>& args);

}  // namespace graphmend::validate
