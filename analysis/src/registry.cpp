#include <algorithm>

#include "graphmend/analysis/finding.h"
#include "rule.h"

namespace graphmend {
namespace {

const std::vector<RegistryEntry>& registry() {
  static const std::vector<RegistryEntry> entries{
#include "dynamo_registry.inc"
  };
  return entries;
}

}  // namespace

const RegistryEntry* find_registry_entry(std::string_view id) {
  const auto& entries = registry();
  auto it = std::find_if(entries.begin(), entries.end(), [&](const RegistryEntry& e) { return e.id == id; });
  return it == entries.end() ? nullptr : &*it;
}

std::string_view registry_id_for(const RuleInfo& rule, TorchVersion torch) {
  std::string_view id = rule.registry_id;
  std::string_view rest = rule.registry_id_since;
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    std::string_view item = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    const size_t eq = item.find('=');
    auto since = parse_torch_version(item.substr(0, eq));
    if (since && eq != std::string_view::npos && torch >= *since) id = item.substr(eq + 1);
  }
  return id;
}

std::string registry_url(std::string_view id) {
  // The page Dynamo itself links to from its graph-break messages (torch/_dynamo/exc.py).
  std::string number(id.starts_with("GB") ? id.substr(2) : id);
  return "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb" + number + ".html";
}

const std::vector<const RuleInfo*>& all_rules() {
  static const std::vector<const RuleInfo*> infos = [] {
    std::vector<const RuleInfo*> out;
    for (const Rule* r : registered_rules()) out.push_back(r->info);
    std::sort(out.begin(), out.end(), [](const RuleInfo* a, const RuleInfo* b) { return a->code < b->code; });
    return out;
  }();
  return infos;
}

const RuleInfo* find_rule(std::string_view code) {
  for (const RuleInfo* r : all_rules()) {
    if (r->code == code || r->name == code) return r;
  }
  return nullptr;
}

std::string_view to_string(Applicability applicability) {
  switch (applicability) {
    case Applicability::Safe:
      return "safe";
    case Applicability::Unsafe:
      return "unsafe";
  }
  return "safe";
}

}  // namespace graphmend
