// The open documents and their analyses, as clangd's TUScheduler has them: the one owner of each document's
// text, the debounce after an edit, the tree kept for incremental reparsing (and its reparse budget), and the
// worker pool analyses run on, each document on its own strand so that its tree is touched by one thread at a
// time. No JSON and no protocol: the server and its handlers translate between LSP and this.
//
// Threading: every member is called on the I/O thread; analyses run on the pool and their results come back
// to the I/O thread (Hooks::analysed), which drops those of a version or generation that moved on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graphmend/analysis/config.h"
#include "graphmend/analysis/text.h"
#include "lsp/analysis_result.h"

namespace asio {
class io_context;
}  // namespace asio

namespace graphmend::lsp {

// One edit of a document's tree, in the order the client sent them: the whole text, or a range replaced.
struct TreeEdit {
  bool full = false;
  ByteRange range;
  std::string text;
  // The document's text once this edit is made: the tree's document shares it (one copy per version).
  std::shared_ptr<const std::string> after;
};

struct OpenDocument {
  std::string uri;
  std::string path;         // file system path, or the URI for non-file documents
  std::string module;       // dotted module name ("pkg.models.bert"), empty for non-file documents
  bool is_package = false;  // an __init__.py
  int64_t version = 0;
  // Bumped whenever the configuration that applies to this document changes (settings, a
  // pyproject.toml, functions other open files trace into it): results of older generations are stale.
  uint64_t generation = 1;
  std::shared_ptr<const TextSnapshot> snapshot;
  bool too_large = false;
  std::shared_ptr<const NotebookLayout> notebook;  // a notebook: its cells for `snapshot`

  std::shared_ptr<const AnalysisResult> latest;     // newest result of the current version
  std::shared_ptr<const AnalysisResult> published;  // what the client was last given
  bool publish_pending = false;

  // Whether `latest` is the analysis of this version under this generation.
  bool is_current() const { return latest && latest->version == version && latest->generation == generation; }

  // The scheduler's side (strand, tree, debounce timer, waiters): defined in scheduler.cpp.
  struct Machinery;
  std::unique_ptr<Machinery> machinery;

  OpenDocument();
  ~OpenDocument();
};

class Scheduler {
 public:
  struct Hooks {
    // The configuration an analysis of `document` runs under (I/O thread, when it is scheduled).
    std::function<Config(const OpenDocument& document)> config_for;
    // Turns a result's findings and problems into what clients are given (on the worker thread).
    std::function<void(const std::string& uri, AnalysisResult& result)> present;
    // A result of the document's current version and generation (I/O thread). `result` is `latest` already.
    std::function<void(OpenDocument& document, const AnalysisResult& result)> analysed;
    // A warning for the user (a document past maxFileSize).
    std::function<void(const std::string& text)> warn;
  };

  // `workers`: analysis threads; 0 picks from the hardware.
  Scheduler(asio::io_context& io, unsigned workers, Hooks hooks);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Documents larger than this are not analysed (settings: maxFileSize).
  void set_max_file_bytes(std::size_t bytes) { max_file_bytes_ = bytes; }

  // Opens (or replaces) a document and schedules its first analysis; `notebook`: `text` is its cells joined.
  OpenDocument& open(const std::string& uri, const std::optional<std::string>& path, int64_t version, std::string text,
                     std::shared_ptr<const NotebookLayout> notebook);
  // A new version of the document's text; `edits` are the same change as edits of its tree.
  void change(OpenDocument& document, int64_t version, std::shared_ptr<const TextSnapshot> snapshot,
              std::vector<TreeEdit> edits);
  void close(const std::string& uri);

  OpenDocument* find(const std::string& uri);
  const std::map<std::string, std::shared_ptr<OpenDocument>>& documents() const { return documents_; }

  // Analyses the current version (and generation) unless that is queued already.
  void schedule(OpenDocument& document);
  // Schedules an analysis once the user pauses (the adaptive debounce, or `fixed_ms`).
  void schedule_after_pause(OpenDocument& document, std::optional<int> fixed_ms);
  // The configuration changed for `document`: what was computed is stale; analyse it again and publish.
  void invalidate(OpenDocument& document);
  // Runs `then` with the analysis of the document's current version, now or once it exists (analysing right
  // away, without debounce).
  void with_analysis(OpenDocument& document, std::function<void(const AnalysisResult&)> then);
  // Runs what waits through with_analysis (from Hooks::analysed, in the order the server answers).
  void answer_waiters(OpenDocument& document, const AnalysisResult& result);
  // What waits on `uri` will not be answered: its version moved on (the server answered ContentModified).
  void drop_waiters(const std::string& uri);

  // Runs `work` on the pool, then what it returns on the I/O thread (fix-all, the long computations).
  void background(std::function<std::function<void()>()> work);
  // Runs `task` on the I/O thread (callable from any thread).
  void on_io_thread(std::function<void()> task);

  // Shutdown: no analysis is started any more, debounces are cancelled; results still arrive.
  void stop_scheduling();
  // Exit: nothing more arrives either.
  void stop();

 private:
  struct AnalysisJob;
  void touch(OpenDocument& document);
  void set_text(OpenDocument& document, std::shared_ptr<const TextSnapshot> snapshot);
  void run_analysis(const AnalysisJob& job, std::shared_ptr<AnalysisResult> result);
  void finish_then_run_analysis(const AnalysisJob& job, std::shared_ptr<AnalysisResult> result);
  void analysis_done(const std::string& uri, std::shared_ptr<AnalysisResult> result);
  void analysis_dropped(const std::string& uri, const AnalysisResult& result);

  struct Threads;
  asio::io_context& io_;
  std::unique_ptr<Threads> threads_;
  Hooks hooks_;
  std::size_t max_file_bytes_ = 0;
  bool scheduling_ = true;
  bool stopped_ = false;
  uint64_t next_result_id_ = 0;
  std::map<std::string, std::shared_ptr<OpenDocument>> documents_;
  // Documents edited most recently, newest first: only these keep their tree-sitter tree between
  // analyses (for incremental reparsing); the others are parsed again when they next change.
  std::list<std::string> recently_edited_;
};

}  // namespace graphmend::lsp
