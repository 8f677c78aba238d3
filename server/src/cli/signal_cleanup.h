// Temporary files that SIGINT, SIGTERM or SIGHUP must not leave behind in the user's tree.
//
// A writer registers each temporary file's path (TempFileSlot) as it creates it; the signal handler
// stops new writes, unlinks every registered path and re-raises the signal with the previous action
// (the default one in the executable, so the exit status still says which signal stopped it). While a
// file is rewritten in place (InPlaceWrite), the signal waits until the file is whole again.
#pragma once

#include <cstddef>
#include <string>

namespace graphmend::cli {

// Installs the handlers for its lifetime (not for signals that were ignored, as under nohup) and
// restores the previous ones after.
class SignalCleanup {
 public:
  SignalCleanup();
  ~SignalCleanup();
  SignalCleanup(const SignalCleanup&) = delete;
  SignalCleanup& operator=(const SignalCleanup&) = delete;
};

// True once a cleanup signal arrived: start no new write.
bool interrupted();

// One registered temporary file. The path is registered before the file is created (the name is
// random; unlinking a name that was never created is harmless), and a signal handler waits for a
// creation under way, so no signal falls between creating the file and registering it.
class TempFileSlot {
 public:
  TempFileSlot();   // waits for a free slot when every slot is taken
  ~TempFileSlot();  // unregisters; does not unlink
  TempFileSlot(const TempFileSlot&) = delete;
  TempFileSlot& operator=(const TempFileSlot&) = delete;

  // Registers `path` and creates it (O_CREAT | O_EXCL added to `flags`): the descriptor, or -1 with errno
  // set (ENAMETOOLONG: too long for the slot; ECANCELED: a signal arrived, no new file is made).
  int create(const std::string& path, int flags, unsigned mode);
  // The file now holds the only complete copy of the new text: a signal must keep it.
  void keep();
  void release();  // unregister (the file was renamed or unlinked)
  const char* path() const;

 private:
  size_t index_;
};

// Scope in which the user's file is rewritten in place: a signal arriving now is handled when the last
// such scope ends (the handler only records it), so the file is never left half-written by one. Once a
// signal arrived, no new scope may start: allowed() is false then and the file must not be touched.
class InPlaceWrite {
 public:
  InPlaceWrite();
  ~InPlaceWrite();
  InPlaceWrite(const InPlaceWrite&) = delete;
  InPlaceWrite& operator=(const InPlaceWrite&) = delete;
  bool allowed() const { return allowed_; }

 private:
  bool allowed_;
};

}  // namespace graphmend::cli
