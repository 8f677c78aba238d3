// `graphmend check --add-noqa`: `# noqa: CODES` on every line that has findings (ruff's --add-noqa).
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "cli/report.h"

namespace graphmend::cli {

// Adds to each checked file of `reports` the directives that suppress its findings (noqa_insertions,
// graphmend/analysis/noqa.h: the server's quick fix edits the same way), written with write_source
// (atomic; encoding, BOM and line endings kept). A file that changed on disk since it was checked, a
// notebook, or a file not fully read (syntax errors, regions too deep) is left alone. Prints
// `Added N noqa directive(s).` to `err` (when N > 0, as ruff does), errors and warnings likewise; returns
// the exit status: 0, or 2 when any file could not be written or `check_errors` files were not checked.
int add_noqa(const std::vector<FileReport>& reports, size_t check_errors, std::ostream& err);

}  // namespace graphmend::cli
