#include "lsp/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <asio.hpp>
#include <atomic>
#include <filesystem>
#include <thread>

#include "graphmend/analysis/analyzer.h"
#include "graphmend/analysis/document.h"
#include "graphmend/analysis/semantic.h"
#include "graphmend/analysis/workspace.h"
#include "graphmend/transforms/fixer.h"
#include "lsp/debounce.h"

namespace graphmend::lsp {
namespace {

using Clock = std::chrono::steady_clock;
using Strand = asio::strand<asio::thread_pool::executor_type>;

constexpr std::size_t kKeepTrees = 8;
constexpr std::chrono::milliseconds kFinishParseAfter{10};

// The document's tree side: its parsed Document, analyzer and reparse statistics, touched only on its strand.
struct TreeState {
  std::unique_ptr<Document> document;
  // Re-analyses only the edited function when it can (the results equal a whole-file analysis).
  IncrementalAnalyzer analyzer;
  Clock::duration reparse_time{};  // spent applying edits to the tree since the last analysis (for the log)
  // Recent reparses that finished: the budget is a few times their median, so only the outliers
  // (tree-sitter's error recovery after an unclosed bracket) are cut short.
  std::array<Clock::duration, 16> recent_reparses{};
  std::size_t reparses = 0;
  void record_reparse(Clock::duration took) { recent_reparses[reparses++ % recent_reparses.size()] = took; }
  std::chrono::microseconds reparse_budget() const {
    constexpr std::chrono::microseconds kMinimum{2000}, kMaximum{100000};
    const std::size_t n = std::min(reparses, recent_reparses.size());
    if (n < 4) return kMaximum;
    std::array<Clock::duration, 16> sorted = recent_reparses;
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.begin() + n);
    auto budget = std::chrono::duration_cast<std::chrono::microseconds>(4 * sorted[n / 2]);
    return std::clamp(budget, kMinimum, kMaximum);
  }
  void release() {
    analyzer.reset();
    document.reset();
  }
};

std::string size_warning(const std::string& uri, std::size_t size, std::size_t limit) {
  return uri + " has " + std::to_string(size) + " bytes, more than maxFileSize (" + std::to_string(limit) +
         "): not analysed";
}

}  // namespace

struct Scheduler::Threads {
  explicit Threads(unsigned workers)
      // Two workers at least, even on two cores: one slow document never holds the others' diagnostics.
      : pool(workers != 0 ? workers : std::clamp(std::thread::hardware_concurrency(), 3u, 5u) - 1u) {}
  asio::thread_pool pool;
};

struct OpenDocument::Machinery {
  Machinery(asio::io_context& io, Strand document_strand) : strand(std::move(document_strand)), debounce(io) {}

  Strand strand;
  std::shared_ptr<TreeState> tree_state = std::make_shared<TreeState>();
  // The newest version, readable from the strand so queued analyses of old versions are skipped.
  std::shared_ptr<std::atomic<int64_t>> live_version = std::make_shared<std::atomic<int64_t>>(0);
  // Whether the strand keeps the tree after an analysis (for incremental reparsing of the next
  // edit). Only documents being edited do: a tree costs far more memory than its text.
  std::shared_ptr<std::atomic<bool>> keep_tree = std::make_shared<std::atomic<bool>>(false);

  asio::steady_timer debounce;
  DebouncePolicy policy;
  int64_t scheduled_version = -1;
  uint64_t scheduled_generation = 0;
  std::vector<std::function<void(const AnalysisResult&)>> waiters;
};

OpenDocument::OpenDocument() = default;
OpenDocument::~OpenDocument() = default;

// What an analysis on a document's strand needs.
struct Scheduler::AnalysisJob {
  Config config;
  std::string uri;
  std::string path;
  Strand strand;
  std::shared_ptr<TreeState> tree_state;
  std::shared_ptr<std::atomic<bool>> keep;
  std::shared_ptr<std::atomic<int64_t>> live;
};

Scheduler::Scheduler(asio::io_context& io, unsigned workers, Hooks hooks)
    : io_(io), threads_(std::make_unique<Threads>(workers)), hooks_(std::move(hooks)) {}

Scheduler::~Scheduler() {
  threads_->pool.stop();
  threads_->pool.join();
}

OpenDocument& Scheduler::open(const std::string& uri, const std::optional<std::string>& path, int64_t version,
                              std::string text, std::shared_ptr<const NotebookLayout> notebook) {
  auto document = std::make_shared<OpenDocument>();
  document->machinery = std::make_unique<OpenDocument::Machinery>(io_, asio::make_strand(threads_->pool));
  document->uri = uri;
  document->path = path.value_or(uri);
  if (document->path != uri) {
    document->module = workspace::module_name_of(document->path);
    document->is_package = std::filesystem::path(document->path).filename() == "__init__.py";
  }
  document->version = version;
  document->machinery->live_version->store(version);
  document->notebook = std::move(notebook);
  document->snapshot = std::make_shared<const TextSnapshot>(std::make_shared<const std::string>(std::move(text)));
  document->too_large = document->snapshot->text->size() > max_file_bytes_;
  documents_[uri] = document;
  // The tree is built by the first analysis (on the strand), not here.
  if (document->too_large) hooks_.warn(size_warning(uri, document->snapshot->text->size(), max_file_bytes_));
  spdlog::info("opened {} (version {}, {} bytes)", uri, version, document->snapshot->text->size());
  // A file is opened to be read or edited: it keeps its tree and model like an edited one, so the
  // first keystroke is analysed incrementally.
  touch(*document);
  document->publish_pending = true;
  schedule(*document);
  return *document;
}

void Scheduler::set_text(OpenDocument& document, std::shared_ptr<const TextSnapshot> snapshot) {
  document.snapshot = std::move(snapshot);
  const bool too_large = document.snapshot->text->size() > max_file_bytes_;
  if (too_large == document.too_large) return;
  document.too_large = too_large;
  if (too_large) {
    hooks_.warn(size_warning(document.uri, document.snapshot->text->size(), max_file_bytes_));
    asio::post(document.machinery->strand, [tree_state = document.machinery->tree_state] { tree_state->release(); });
  }
}

void Scheduler::change(OpenDocument& document, int64_t version, std::shared_ptr<const TextSnapshot> snapshot,
                       std::vector<TreeEdit> edits) {
  OpenDocument::Machinery& machinery = *document.machinery;
  if (!document.too_large) {
    asio::post(machinery.strand, [tree_state = machinery.tree_state, edits = std::move(edits)] {
      if (!tree_state->document) return;  // released: the next analysis parses the text afresh
      const auto start = Clock::now();
      const bool was_pending = tree_state->document->parse_pending();
      bool done = true;
      for (const TreeEdit& edit : edits) {
        if (edit.full) {
          tree_state->document->replace_text(edit.after);
        } else {
          // A reparse in error recovery can take tens of milliseconds: past the budget the analysis
          // gives the last findings at once and the parse finishes after (run_analysis()).
          done = tree_state->document->apply_edit(edit.range, edit.text, edit.after, tree_state->reparse_budget());
        }
      }
      const auto took = Clock::now() - start;
      if (done && !was_pending && edits.size() == 1) tree_state->record_reparse(took);
      tree_state->reparse_time += took;
    });
  }
  document.version = version;
  machinery.live_version->store(version);
  set_text(document, std::move(snapshot));
  touch(document);
  document.latest.reset();
}

void Scheduler::touch(OpenDocument& document) {
  document.machinery->keep_tree->store(true);
  recently_edited_.remove(document.uri);
  recently_edited_.push_front(document.uri);
  if (recently_edited_.size() <= kKeepTrees) return;
  // The least recently edited document gives its tree back; it is parsed again when needed.
  if (OpenDocument* evicted = find(recently_edited_.back())) {
    OpenDocument::Machinery& machinery = *evicted->machinery;
    machinery.keep_tree->store(false);
    asio::post(machinery.strand, [tree_state = machinery.tree_state, keep = machinery.keep_tree] {
      if (!keep->load()) tree_state->release();
    });
  }
  recently_edited_.pop_back();
}

void Scheduler::close(const std::string& uri) {
  recently_edited_.remove(uri);
  const auto it = documents_.find(uri);
  if (it == documents_.end()) return;
  it->second->machinery->debounce.cancel();
  it->second->machinery->live_version->store(-1);
  documents_.erase(it);
}

OpenDocument* Scheduler::find(const std::string& uri) {
  const auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : it->second.get();
}

void Scheduler::schedule_after_pause(OpenDocument& document, std::optional<int> fixed_ms) {
  OpenDocument::Machinery& machinery = *document.machinery;
  const auto delay = machinery.policy.next(fixed_ms);
  if (delay <= Clock::duration::zero()) return schedule(document);
  machinery.debounce.expires_after(delay);
  machinery.debounce.async_wait([this, uri = document.uri, version = document.version](const std::error_code& error) {
    if (error || stopped_) return;
    OpenDocument* current = find(uri);
    if (current != nullptr && current->version == version) schedule(*current);
  });
}

void Scheduler::invalidate(OpenDocument& document) {
  ++document.generation;
  document.publish_pending = true;
  schedule(document);
}

void Scheduler::schedule(OpenDocument& document) {
  if (!scheduling_) return;
  OpenDocument::Machinery& machinery = *document.machinery;
  if (machinery.scheduled_version == document.version && machinery.scheduled_generation == document.generation) {
    return;  // already queued
  }
  machinery.debounce.cancel();
  machinery.scheduled_version = document.version;
  machinery.scheduled_generation = document.generation;
  auto result = std::make_shared<AnalysisResult>();
  result->version = document.version;
  result->generation = document.generation;
  result->snapshot = document.snapshot;
  result->notebook = document.notebook;
  if (document.too_large) {
    asio::post(io_, [this, uri = document.uri, result] { analysis_done(uri, result); });
    return;
  }
  AnalysisJob job{hooks_.config_for(document), document.uri,        document.path,         machinery.strand,
                  machinery.tree_state,        machinery.keep_tree, machinery.live_version};
  asio::post(machinery.strand, [this, job = std::move(job), result] { run_analysis(job, result); });
}

// Runs on the document's strand.
void Scheduler::run_analysis(const AnalysisJob& job, std::shared_ptr<AnalysisResult> result) {
  const std::string& uri = job.uri;
  const std::shared_ptr<TreeState>& tree_state = job.tree_state;
  if (job.live->load() != result->version) {
    // An edit arrived after this was queued: a newer analysis will follow.
    asio::post(io_, [this, uri, result] { analysis_dropped(uri, *result); });
    return;
  }
  const auto start = Clock::now();
  try {
    if (!tree_state->document) {
      // Released while idle (or never parsed): parse the current text from scratch.
      tree_state->document = std::make_unique<Document>(job.path, result->snapshot->text);
    }
    // The tree's document shares the snapshot's text: the same pointer, unless an edit was made again
    // (a size the edit did not predict). Then the texts must still be equal.
    if (tree_state->document->shared_text() != result->snapshot->text &&
        tree_state->document->text() != *result->snapshot->text) {
      // Never expected; recover by parsing the text the client holds.
      spdlog::error("{}: tree text out of sync with version {}; reparsing", uri, result->version);
      tree_state->document = std::make_unique<Document>(job.path, result->snapshot->text);
    }
    IncrementalAnalyzer::Result run =
        check_incremental(tree_state->analyzer, *tree_state->document, job.config, result->generation);
    if (run.analysis.model) {
      result->imported_calls = run.analysis.model->imported_calls_from_traced_code();
    }
    result->findings = std::move(run.analysis.findings);
    result->problems = std::move(run.analysis.problems);
    // A fix across two cells, or one editing an IPython line, cannot be applied to the cells.
    if (result->notebook) cli::drop_cross_cell_fixes(result->findings, result->notebook->virt.protected_ranges);
    result->incremental = run.reanalyzed.has_value();
    result->held = run.held;
    result->provisional = run.provisional;
    result->reparse_time = std::exchange(tree_state->reparse_time, Clock::duration{});
  } catch (const std::exception& error) {
    tree_state->analyzer.reset();
    result->findings.clear();
    result->problems.clear();
    result->error = error.what();
  }
  if (!result->provisional && !job.keep->load()) tree_state->release();
  result->docs_url = job.config.docs_url;
  hooks_.present(uri, *result);
  result->elapsed = Clock::now() - start;
  asio::post(io_, [this, uri, result] { analysis_done(uri, result); });
  if (result->provisional) {
    // The reparse ran out of its budget: these were the last findings moved through the edit. Once the
    // user pauses, finish the parse and analyse the same version again; that result is published too.
    // (Finishing at once would make the next keystroke wait for it.)
    auto complete = std::make_shared<AnalysisResult>();
    complete->version = result->version;
    complete->generation = result->generation;
    complete->snapshot = result->snapshot;
    complete->notebook = result->notebook;
    complete->completes_provisional = true;
    auto pause = std::make_shared<asio::steady_timer>(io_, kFinishParseAfter);
    pause->async_wait([this, pause, job, complete](const std::error_code& ec) {
      if (ec || job.live->load() != complete->version) return;  // a newer edit has its own
      asio::post(job.strand, [this, job, complete] { finish_then_run_analysis(job, complete); });
    });
  }
}

// Resumes a halted reparse one budget at a time, so that an edit queued meanwhile goes first (it
// starts the parse over, and its own analysis follows); analyses once the parse is complete.
void Scheduler::finish_then_run_analysis(const AnalysisJob& job, std::shared_ptr<AnalysisResult> result) {
  Document* document = job.tree_state->document.get();
  if (job.live->load() == result->version && document && !document->finish_parse(job.tree_state->reparse_budget())) {
    asio::post(job.strand, [this, job, result] { finish_then_run_analysis(job, result); });
    return;
  }
  run_analysis(job, result);
}

void Scheduler::analysis_dropped(const std::string& uri, const AnalysisResult& result) {
  OpenDocument* document = find(uri);
  if (document == nullptr) return;
  OpenDocument::Machinery& machinery = *document->machinery;
  if (machinery.scheduled_version == result.version && machinery.scheduled_generation == result.generation) {
    machinery.scheduled_version = -1;
  }
  if (!machinery.waiters.empty()) schedule(*document);
}

void Scheduler::analysis_done(const std::string& uri, std::shared_ptr<AnalysisResult> result) {
  if (stopped_) return;
  OpenDocument* document = find(uri);
  if (document == nullptr) return;
  if (result->elapsed > Clock::duration::zero()) document->machinery->policy.record(result->elapsed);
  if (result->version != document->version || result->generation != document->generation) {
    spdlog::debug("dropping stale analysis of {} version {}", uri, result->version);
    analysis_dropped(uri, *result);
    return;
  }
  result->result_id = std::to_string(++next_result_id_);
  spdlog::debug("analysed {} v{}: {} findings in {:.2f} ms after {:.2f} ms reparsing ({})", uri, result->version,
                result->findings.size(), std::chrono::duration<double, std::milli>(result->elapsed).count(),
                std::chrono::duration<double, std::milli>(result->reparse_time).count(),
                result->provisional   ? "provisional: the reparse is past its budget"
                : result->held        ? "held: the edit broke the syntax"
                : result->incremental ? "the edited function"
                                      : "whole file");
  document->latest = result;
  hooks_.analysed(*document, *result);
}

void Scheduler::with_analysis(OpenDocument& document, std::function<void(const AnalysisResult&)> then) {
  if (document.is_current()) return then(*document.latest);
  document.machinery->waiters.push_back(std::move(then));
  schedule(document);
}

void Scheduler::answer_waiters(OpenDocument& document, const AnalysisResult& result) {
  auto waiters = std::move(document.machinery->waiters);
  document.machinery->waiters.clear();
  for (auto& waiter : waiters) waiter(result);
}

void Scheduler::drop_waiters(const std::string& uri) {
  if (OpenDocument* document = find(uri)) document->machinery->waiters.clear();
}

void Scheduler::background(std::function<std::function<void()>()> work) {
  asio::post(threads_->pool, [this, work = std::move(work)] {
    std::function<void()> then = work();
    asio::post(io_, std::move(then));
  });
}

void Scheduler::on_io_thread(std::function<void()> task) { asio::post(io_, std::move(task)); }

void Scheduler::stop_scheduling() {
  scheduling_ = false;
  for (auto& [uri, document] : documents_) document->machinery->debounce.cancel();
}

void Scheduler::stop() {
  stop_scheduling();
  stopped_ = true;
}

}  // namespace graphmend::lsp
