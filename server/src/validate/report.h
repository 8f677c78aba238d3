// Presentation of a validation result: the terminal table and the `--report DIR` files
// (validation.json and a self-contained report.html with inline SVG charts).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace graphmend::validate {

// A short table: graphs, breaks, fullgraph, recompiles, cold start and steady state per arm, the
// speedups, output equality and the remaining break sites. `result` is the validator's result object.
std::string format_table(const nlohmann::json& result);

// One self-contained HTML page (no external resources): before/after bar charts and break tables.
std::string render_html(const nlohmann::json& result);

// Writes DIR/validation.json and DIR/report.html, creating DIR. Throws std::runtime_error on I/O failure.
void write_report(const std::filesystem::path& dir, const nlohmann::json& result);

// "12.3 s", "4.56 ms", "78.9 us"; "-" for null.
std::string format_seconds(const nlohmann::json& seconds);

}  // namespace graphmend::validate
