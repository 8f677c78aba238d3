// Where `graphmend check`'s time goes: CPU time per phase (reading, parsing, the semantic model, the
// rules, fixes, output), summed over the threads that ran it. A phase's time is its own: a parse inside
// the fix loop counts as parsing, not as fixing. Cheap enough to stay on (two clock reads a phase).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace graphmend::timing {

enum class Phase : uint8_t { Read, Parse, Semantic, Rules, Fixes, Cache, Output, kCount };
std::string_view name(Phase phase);

// Charges the thread's CPU time from construction to destruction to `phase`; while a nested Scope runs,
// the enclosing one is paused.
class Scope {
 public:
  explicit Scope(Phase phase);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Phase phase_;
  Scope* parent_;
};

struct Totals {
  std::array<uint64_t, static_cast<size_t>(Phase::kCount)> cpu_ns{};   // per phase
  std::array<uint64_t, static_cast<size_t>(Phase::kCount)> entries{};  // how often it was entered
};
// The totals since the process started, over all threads.
Totals totals();

}  // namespace graphmend::timing
