#include "graphmend/analysis/phase_timing.h"

#include <time.h>

#include <atomic>

namespace graphmend::timing {
namespace {

constexpr size_t kPhases = static_cast<size_t>(Phase::kCount);
std::array<std::atomic<uint64_t>, kPhases> g_cpu_ns{};
std::array<std::atomic<uint64_t>, kPhases> g_entries{};

// The innermost Scope of this thread, and when it last started or resumed.
thread_local Scope* t_current = nullptr;
thread_local uint64_t t_since = 0;

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

void charge(Phase phase, uint64_t now) {
  g_cpu_ns[static_cast<size_t>(phase)].fetch_add(now - t_since, std::memory_order_relaxed);
}

}  // namespace

std::string_view name(Phase phase) {
  switch (phase) {
    case Phase::Read:
      return "read";
    case Phase::Parse:
      return "parse";
    case Phase::Semantic:
      return "semantic";
    case Phase::Rules:
      return "rules";
    case Phase::Fixes:
      return "fixes";
    case Phase::Cache:
      return "cache";
    case Phase::Output:
      return "output";
    case Phase::kCount:
      break;
  }
  return "?";
}

Scope::Scope(Phase phase) : phase_(phase), parent_(t_current) {
  const uint64_t now = thread_cpu_ns();
  if (parent_) charge(parent_->phase_, now);
  g_entries[static_cast<size_t>(phase)].fetch_add(1, std::memory_order_relaxed);
  t_current = this;
  t_since = now;
}

Scope::~Scope() {
  const uint64_t now = thread_cpu_ns();
  charge(phase_, now);
  t_current = parent_;
  t_since = now;
}

Totals totals() {
  Totals out;
  for (size_t i = 0; i < kPhases; ++i) {
    out.cpu_ns[i] = g_cpu_ns[i].load(std::memory_order_relaxed);
    out.entries[i] = g_entries[i].load(std::memory_order_relaxed);
  }
  return out;
}

}  // namespace graphmend::timing
