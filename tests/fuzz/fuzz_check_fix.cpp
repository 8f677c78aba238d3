// libFuzzer target: the engine on arbitrary bytes read as a Python file.
//
// For each input: parse, analyse (compiled scope and `all` scope), attach fixes, then fix_all with safe
// fixes and with unsafe ones. Asserted (abort, so libFuzzer saves the input):
//   * no crash, no sanitizer report, no exception escapes the engine;
//   * every attached fix has edits inside the text that apply_edits accepts;
//   * when the input parses without errors, the fixed text parses without errors too;
//   * fix_all on the fixed text changes nothing (the fix loop reached its fixpoint: idempotence);
//   * the language server's incremental analysis of an edit (a slice of the input inserted, then
//     removed again, at a place the input's first bytes choose) gives the whole-file analysis's findings,
//     unless it held the last findings because the edit broke the syntax.
// With GRAPHMEND_FUZZ_EACH_FIX=1 in the environment, also: every fix offered on a file that parses, applied
// alone, gives a file that parses (fix_all drops a whole pass when one fix breaks the file, so a broken
// fix silently costs every other fix of that pass).
// scripts/fuzz.sh builds it (clang, ASan) and seeds it from tests/fixtures.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <algorithm>
#include <string>
#include <vector>

#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/document.h"
#include "graphmend/transforms/fixer.h"

namespace {

using namespace graphmend;

[[noreturn]] void fail(const char* what, const std::string& input, const std::string& detail) {
  std::fprintf(stderr, "\n== graphmend fuzz: %s\n-- input (%zu bytes):\n%s\n-- detail:\n%s\n", what, input.size(),
               input.c_str(), detail.c_str());
  std::abort();
}

const bool each_fix = [] {
  const char* v = std::getenv("GRAPHMEND_FUZZ_EACH_FIX");
  return v && *v && std::string(v) != "0";
}();

void check_fixes(const std::string& input, const Config& config) {
  Document document("fuzz.py", input);
  const bool parsed_clean = !document.has_syntax_errors();
  Analysis analysis = analyze(document, config);
  attach_fixes(document, analysis);
  for (const Finding& f : analysis.findings) {
    if (f.range.start > f.range.end || f.range.end > input.size()) fail("finding range outside the text", input, f.message);
    if (!f.fix) continue;
    for (const TextEdit& e : f.fix->edits) {
      if (e.range.start > e.range.end || e.range.end > input.size())
        fail("fix edit outside the text", input, f.fix->title);
    }
    std::string applied;
    try {
      applied = apply_edits(input, f.fix->edits);
    } catch (const std::exception& ex) {
      fail("a fix's own edits do not apply", input, f.fix->title + ": " + ex.what());
    }
    if (each_fix && parsed_clean && Document("fuzz.py", applied).has_syntax_errors())
      fail("a fix applied alone breaks the file", input, f.fix->title + "\n-- result:\n" + applied);
  }
}

void check_fix_all(const std::string& input, bool parsed_clean, const Config& config, bool unsafe) {
  FixOptions options;
  options.unsafe = unsafe;
  const char* mode = unsafe ? "unsafe" : "safe";
  FixAllResult first = fix_all("fuzz.py", input, config, options);
  if (!first.changed) {
    if (first.text != input) fail("fix_all changed the text but says it did not", input, mode);
    return;
  }
  if (!parsed_clean) fail("fix_all edited a file with syntax errors", input, first.text);
  Document fixed("fuzz.py", first.text);
  if (fixed.has_syntax_errors()) fail("the fixed text does not parse", input, std::string(mode) + "\n" + first.text);
  FixAllResult second = fix_all("fuzz.py", first.text, config, options);
  if (second.changed || second.text != first.text)
    fail("fix_all is not idempotent", input,
         std::string(mode) + "\n-- after one fix_all:\n" + first.text + "\n-- after two:\n" + second.text);
}

std::string describe(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    out += std::string(f.rule->code) + " " + std::to_string(f.range.start) + "-" + std::to_string(f.range.end) + " " +
           f.message + "\n";
    for (const auto& r : f.related) out += "  " + std::to_string(r.range.start) + "-" + std::to_string(r.range.end) + "\n";
  }
  return out;
}

void check_incremental(const std::string& input, const Config& config) {
  if (input.size() < 4) return;
  const auto at = static_cast<uint32_t>((static_cast<unsigned char>(input[0]) << 8 | static_cast<unsigned char>(input[1])) %
                                        input.size());
  const auto length = std::min<uint32_t>(static_cast<unsigned char>(input[2]) % 24 + 1,
                                         static_cast<uint32_t>(input.size()) - at);
  const std::string slice = input.substr(at, length);
  std::string before = input;
  before.erase(at, length);
  Document document("fuzz.py", before);
  IncrementalAnalyzer analyzer;
  analyzer.run(document, config, 1);
  auto compare = [&](const char* what) {
    auto result = analyzer.run(document, config, 1);
    if (result.held) return;
    Document fresh("fuzz.py", document.text());
    std::string expected = describe(analyze(fresh, config).findings), got = describe(result.analysis.findings);
    if (expected != got)
      fail("incremental analysis differs from the whole-file one", input,
           std::string(what) + "\n-- text:\n" + document.text() + "\n-- whole file:\n" + expected + "-- incremental:\n" + got);
  };
  document.apply_edit({at, at}, slice);  // the input itself
  compare("after inserting the slice");
  document.apply_edit({at, at + length}, "");
  compare("after removing it again");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;  // keep inputs small; large files are the CLI tests' business
  const std::string input(reinterpret_cast<const char*>(data), size);
  Config compiled;
  Config all;
  all.scope = Scope::All;
  bool parsed_clean = false;
  try {
    parsed_clean = !Document("fuzz.py", input).has_syntax_errors();
    check_fixes(input, compiled);
    check_fixes(input, all);
    check_fix_all(input, parsed_clean, compiled, false);
    check_fix_all(input, parsed_clean, all, true);
    check_incremental(input, compiled);
  } catch (const std::exception& ex) {
    fail("exception escaped the engine", input, ex.what());
  }
  return 0;
}
