#include "graphmend/analysis/workspace.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "graphmend/analysis/document.h"
#include "graphmend/analysis/semantic.h"

namespace graphmend::workspace {
namespace fs = std::filesystem;

std::string module_name_of(const fs::path& file) {
  std::error_code ec;
  const fs::path p = fs::absolute(file, ec).lexically_normal();
  std::vector<std::string> parts;
  if (p.stem() != "__init__") parts.push_back(p.stem().string());
  for (fs::path dir = p.parent_path(); fs::exists(dir / "__init__.py", ec); dir = dir.parent_path()) {
    parts.push_back(dir.filename().string());
    if (dir == dir.parent_path()) break;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : ".") + *it;
  return out;
}

std::string resolve_module(const std::string& importer, bool importer_is_package, const std::string& module) {
  if (!module.starts_with(".")) return module;
  size_t dots = module.find_first_not_of('.');
  if (dots == std::string::npos) dots = module.size();
  std::string base = importer;
  const size_t up = importer_is_package ? dots - 1 : dots;
  for (size_t i = 0; i < up; ++i) {
    const auto d = base.rfind('.');
    base = d == std::string::npos ? "" : base.substr(0, d);
  }
  const std::string rest = module.substr(dots);
  if (rest.empty()) return base;
  return base.empty() ? rest : base + "." + rest;
}

std::string PackageIndex::reexporting_module(const fs::path& importer, const std::string& importer_module,
                                             const std::string& module, const std::string& name) {
  auto key = std::make_tuple(importer.parent_path().string() + (importer.filename() == "__init__.py" ? "/" : ""),
                             importer_module, module, name);
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = answers_.find(key); it != answers_.end()) return it->second;
    generation = generation_;
  }
  std::string answer = look_up(importer, importer_module, module, name, generation);
  std::lock_guard<std::mutex> lock(mutex_);
  // A forget() meanwhile: the answer may come from the old file; it is given, not kept.
  if (generation == generation_) answers_.emplace(std::move(key), answer);
  return answer;
}

std::string PackageIndex::look_up(const fs::path& importer, const std::string& importer_module,
                                  const std::string& module, const std::string& name, uint64_t generation) {
  const size_t depth = static_cast<size_t>(std::count(importer_module.begin(), importer_module.end(), '.'));
  std::error_code ec;
  fs::path root = fs::absolute(importer, ec).lexically_normal().parent_path();
  if (importer.filename() == "__init__.py") root = root.parent_path();
  for (size_t i = 0; i < depth; ++i) root = root.parent_path();
  fs::path init = root;
  for (size_t start = 0; start <= module.size();) {
    const size_t dot = module.find('.', start);
    init /= module.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  init /= "__init__.py";
  if (!fs::is_regular_file(init, ec)) return "";
  // Parsed once per package (a package re-exports many names), outside the lock: other lookups go on meanwhile.
  const std::string local = name.starts_with("@") ? name.substr(1) : name.substr(0, name.find('.'));
  std::shared_ptr<const Imports> imports;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = imports_by_init_.find(init.string()); it != imports_by_init_.end()) imports = it->second;
  }
  if (!imports) {
    // Imports are ASCII in practice: the bytes as they are (a BOM dropped) are enough to read them.
    std::ifstream in(init, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
    Document document(init.string(), std::move(text));
    SemanticModel model(document, Scope::Compiled);
    imports = std::make_shared<const Imports>(model.imports());
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation == generation_) imports_by_init_.emplace(init.string(), imports);
  }
  const auto bound = imports->find(local);
  if (bound == imports->end()) return "";
  const std::string origin = bound->second;
  const auto dot = origin.rfind('.');
  if (dot == std::string::npos || origin.substr(dot + 1) != local) return "";  // renamed: not followed
  return resolve_module(module, true, origin.substr(0, dot));
}

void PackageIndex::forget(const fs::path& init) {
  std::error_code ec;
  const std::string key = fs::absolute(init, ec).lexically_normal().string();
  std::lock_guard<std::mutex> lock(mutex_);
  imports_by_init_.erase(key);
  answers_.clear();
  ++generation_;
}

}  // namespace graphmend::workspace
