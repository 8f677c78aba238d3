#include "cli/check_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace graphmend::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Entries kept per source file: the workspace pass checks a file once alone and once more with the
// functions other files trace into it, and both runs must hit next time.
constexpr size_t kEntriesPerFile = 4;

std::string hex128(XXH128_hash_t h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

// The executable's identity: its version, path, size and modification time, so that any rebuild (a rule
// changed, a fix added) invalidates every entry without reading the (large, with debug info) binary.
std::string executable_id() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::string id = std::string(GRAPHMEND_VERSION) + "\n" + self.string();
  struct stat st {};
  if (!ec && ::stat(self.c_str(), &st) == 0) {
    id += "\n" + std::to_string(st.st_size) + "\n" + std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec) + "\n" + std::to_string(st.st_ino);
  }
  return id;
}

json range_json(ByteRange r) { return json::array({r.start, r.end}); }
ByteRange range_of(const json& j) { return {j.at(0).get<uint32_t>(), j.at(1).get<uint32_t>()}; }

json finding_json(const Finding& f) {
  json related = json::array();
  for (const auto& r : f.related) related.push_back({{"range", range_json(r.range)}, {"message", r.message}});
  json j{{"rule", std::string(f.rule->code)},
         {"range", range_json(f.range)},
         {"message", f.message},
         {"related", related},
         {"in_loop", f.in_loop},
         {"no_fix_reason", f.no_fix_reason},
         {"registry_id", std::string(f.registry_id)}};
  if (f.fix) {
    json edits = json::array();
    for (const auto& e : f.fix->edits) edits.push_back({{"range", range_json(e.range)}, {"text", e.new_text}});
    j["fix"] = {{"title", f.fix->title}, {"applicability", static_cast<int>(f.fix->applicability)}, {"edits", edits}};
  }
  return j;
}

Finding finding_of(const json& j) {
  Finding f;
  f.rule = find_rule(j.at("rule").get<std::string>());
  if (!f.rule) throw std::runtime_error("unknown rule in the cache");
  f.range = range_of(j.at("range"));
  f.message = j.at("message").get<std::string>();
  for (const auto& r : j.at("related"))
    f.related.push_back({range_of(r.at("range")), r.at("message").get<std::string>()});
  f.in_loop = j.at("in_loop").get<bool>();
  f.no_fix_reason = j.at("no_fix_reason").get<std::string>();
  // A view into the registry table (the cached text does not outlive this function).
  if (const RegistryEntry* entry = find_registry_entry(j.value("registry_id", std::string())))
    f.registry_id = entry->id;
  if (j.contains("fix")) {
    const json& x = j.at("fix");
    Fix fix{x.at("title").get<std::string>(), static_cast<Applicability>(x.at("applicability").get<int>()), {}};
    for (const auto& e : x.at("edits")) fix.edits.push_back({range_of(e.at("range")), e.at("text").get<std::string>()});
    f.fix = std::move(fix);
  }
  return f;
}

json result_json(const CachedResult& r) {
  json findings = json::array(), problems = json::array(), calls = json::array();
  for (const auto& f : r.findings) findings.push_back(finding_json(f));
  for (const auto& p : r.problems)
    problems.push_back({{"kind", static_cast<int>(p.kind)}, {"range", range_json(p.range)}, {"message", p.message}});
  for (const auto& [module, function] : r.imported_calls) calls.push_back({module, function});
  return {{"findings", findings}, {"problems", problems}, {"imported_calls", calls}};
}

CachedResult result_of(const json& j) {
  CachedResult r;
  for (const auto& f : j.at("findings")) r.findings.push_back(finding_of(f));
  for (const auto& p : j.at("problems"))
    r.problems.push_back({static_cast<Problem::Kind>(p.at("kind").get<int>()), range_of(p.at("range")),
                          p.at("message").get<std::string>()});
  for (const auto& c : j.at("imported_calls"))
    r.imported_calls.emplace_back(c.at(0).get<std::string>(), c.at(1).get<std::string>());
  return r;
}

}  // namespace

CheckCache::CheckCache(fs::path dir, std::string options_key)
    : dir_(std::move(dir)), options_key_(std::move(options_key)), executable_id_(executable_id()) {}

std::string CheckCache::key(const fs::path& file, const std::string& text, const std::optional<fs::path>& pyproject,
                            std::vector<std::string> traced) const {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  auto feed = [&](std::string_view s) {
    // Length-prefixed, so that no two different sequences of parts hash the same bytes.
    uint64_t n = s.size();
    XXH3_128bits_update(state, &n, sizeof n);
    XXH3_128bits_update(state, s.data(), s.size());
  };
  std::error_code ec;
  feed(executable_id_);
  feed(options_key_);
  feed(fs::absolute(file, ec).lexically_normal().string());
  feed(text);
  if (pyproject) {
    feed(fs::absolute(*pyproject, ec).lexically_normal().string());
    feed(read_file(*pyproject).value_or("\x01unreadable"));
  } else {
    feed("");
  }
  std::sort(traced.begin(), traced.end());
  for (const auto& t : traced) feed(t);
  std::string out = hex128(XXH3_128bits_digest(state));
  XXH3_freeState(state);
  return out;
}

fs::path CheckCache::entry_path(const fs::path& file) const {
  std::error_code ec;
  std::string path = fs::absolute(file, ec).lexically_normal().string();
  return dir_ / GRAPHMEND_VERSION / (hex128(XXH3_128bits(path.data(), path.size())) + ".json");
}

std::optional<CachedResult> CheckCache::get(const fs::path& file, const std::string& key) const {
  auto bytes = read_file(entry_path(file));
  if (!bytes) return std::nullopt;
  try {
    json j = json::parse(*bytes);
    for (const auto& entry : j.at("entries")) {
      if (entry.at("key").get<std::string>() == key) return result_of(entry.at("result"));
    }
  } catch (const std::exception&) {
    // A damaged or foreign entry: recompute (and overwrite it on the way out).
  }
  return std::nullopt;
}

void CheckCache::put(const fs::path& file, const std::string& key, const CachedResult& result) const {
  const fs::path path = entry_path(file);
  std::error_code ec;
  if (!fs::exists(dir_, ec)) {
    fs::create_directories(dir_, ec);
    if (ec) return;
    std::ofstream(dir_ / ".gitignore") << "# Automatically created by graphmend.\n*\n";
    std::ofstream(dir_ / "CACHEDIR.TAG") << "Signature: 8a477f597d28d172789f06886806bc55\n";
  }
  fs::create_directories(path.parent_path(), ec);
  json entries = json::array();
  entries.push_back({{"key", key}, {"result", result_json(result)}});
  if (auto bytes = read_file(path)) {
    try {
      const json old = json::parse(*bytes);  // (bound first: the loop must not run over a temporary's member)
      for (const auto& e : old.at("entries")) {
        if (entries.size() >= kEntriesPerFile) break;
        if (e.at("key").get<std::string>() != key) entries.push_back(e);
      }
    } catch (const std::exception&) {
    }
  }
  std::ostringstream tmp_name;
  tmp_name << path.string() << ".tmp." << ::getpid() << "." << std::hash<std::string>{}(key);
  const fs::path tmp = tmp_name.str();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << json{{"path", fs::absolute(file, ec).string()}, {"entries", entries}}.dump();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace graphmend::cli
