// Glob patterns of file selection and .gitignore files (graphmend/analysis/glob.h): ruff's globset
// semantics on top of fnmatch(3).
#include "graphmend/analysis/glob.h"

#include <doctest/doctest.h>

using graphmend::glob_match;
using graphmend::path_matches;

TEST_CASE("glob: `*`, `?` and classes stay within one segment") {
  CHECK(glob_match("*.py", "model.py"));
  CHECK_FALSE(glob_match("*.py", "pkg/model.py"));
  CHECK(glob_match("pkg/*.py", "pkg/model.py"));
  CHECK_FALSE(glob_match("pkg/*", "pkg/sub/model.py"));
  CHECK(glob_match("m?del.py", "model.py"));
  CHECK_FALSE(glob_match("pkg?model.py", "pkg/model.py"));
  CHECK(glob_match("test_[ab].py", "test_a.py"));
  CHECK_FALSE(glob_match("test_[ab].py", "test_c.py"));
  CHECK(glob_match("test_[!ab].py", "test_c.py"));
  CHECK_FALSE(glob_match("a[/]b", "a/b"));
  CHECK(glob_match(".*", ".hidden"));  // no special leading dot, as in globset
  CHECK(glob_match("\\*.py", "*.py"));
  CHECK_FALSE(glob_match("\\*.py", "x.py"));
  CHECK_FALSE(glob_match("Model.py", "model.py"));  // case-sensitive
}

TEST_CASE("glob: `**` segments match any number of folders") {
  CHECK(glob_match("**/tests/*.py", "tests/x.py"));
  CHECK(glob_match("**/tests/*.py", "a/b/tests/x.py"));
  CHECK_FALSE(glob_match("**/tests/*.py", "a/tests/b/x.py"));
  CHECK(glob_match("a/**/b", "a/b"));
  CHECK(glob_match("a/**/b", "a/x/y/b"));
  CHECK_FALSE(glob_match("a/**/b", "a/x/c"));
  CHECK(glob_match("gen/**", "gen/x.py"));
  CHECK(glob_match("gen/**", "gen/a/b/x.py"));
  CHECK_FALSE(glob_match("gen/**", "gen"));  // what is inside, not the folder itself
  CHECK(glob_match("**", "any/path/at/all.py"));
  CHECK(glob_match("**/**/x", "x"));
  CHECK(glob_match("a**b", "axxb"));  // `**` inside a segment is a `*`
  CHECK_FALSE(glob_match("a**b", "a/b"));
  CHECK(glob_match("a//b", "a/b"));
}

TEST_CASE("path_matches: names anywhere, paths relative to the configuration's folder") {
  const std::filesystem::path base = "/project";
  CHECK(path_matches("build", "/project/src/build", base));
  CHECK(path_matches("build/", "/project/build", base));
  CHECK(path_matches("./build", "/project/build", base));
  CHECK(path_matches("*.py", "/project/a/b/c.py", base));
  CHECK(path_matches("tests/*.py", "/project/tests/x.py", base));
  CHECK_FALSE(path_matches("tests/*.py", "/project/a/tests/x.py", base));
  CHECK(path_matches("**/tests/*.py", "/project/tests/x.py", base));
  CHECK(path_matches("**/tests/*.py", "/project/a/tests/x.py", base));
  CHECK_FALSE(path_matches("tests/*.py", "/elsewhere/tests/x.py", base));
  CHECK(path_matches("/elsewhere/tests/*.py", "/elsewhere/tests/x.py", base));
  CHECK(path_matches("src/gen", "/project/src/./gen", base));
  CHECK_FALSE(path_matches("", "/project/x.py", base));
}
