// File: case_isolation.h
// Runs the part of a property case that calls the code under test in a forked child process,
// so that a crash, an abort (KV_CHECK), a sanitizer report or a hang is a failing case like
// any other: RapidCheck shrinks it (every shrink attempt forks again) and the runner prints
// the shrunk case with its reproduce string, and the run goes on.
//
// A property body is split in two: the parent draws every generated value (RapidCheck records
// the draws to shrink them, and a child's draws would be lost), then hands the check to
// RunIsolated:
//
//   const KernelCase c = *GenKernelCase();          // generation: in the parent
//   RunIsolated([&] { Check(kernel, c); });         // the code under test: in a child
//
// Inside the check, RC_ASSERT / RC_FAIL / RC_PRE / RC_DISCARD / RC_TAG / RC_CLASSIFY / RC_LOG
// behave as in-process (the child reports them to the parent); `*gen` is an error (the case
// fails naming it). RunIsolatedWithPayload's check returns a string that the parent gets
// back (statistics a property collects, a kernel's output).
//
// A child that dies before reporting fails the case with:
//   - how it ended: the signal (SIGSEGV, SIGABRT, ...), the exit status, or the timeout;
//   - the last step it announced with NoteStep (e.g. the state machine's current command);
//   - the beginning of its stderr (the KV_CHECK message, the sanitizer report).
//
// Isolation is a per-thread setting (IsolationScope), installed by the property runner from
// RunOptions; kInProcess runs the check directly (for debuggers, and where the fork costs
// more than the case). Forking a process whose other threads hold locks is safe here: the
// engine's thread pools are re-created in a child (thread_pool.cc), OpenBLAS re-creates its
// own threads, and the child never returns into the parent's code (it ends with _exit).
#ifndef KVCHECK_PROPERTIES_CASE_ISOLATION_H_
#define KVCHECK_PROPERTIES_CASE_ISOLATION_H_

#include <functional>
#include <string>
#include <string_view>

namespace kvcheck::properties {

enum class Isolation {
  kFork,       // each check in a forked child (default)
  kInProcess,  // the check runs in the calling process
};

// "fork" / "none" (the flag and KVCHECK_ISOLATION values).
const char* IsolationName(Isolation isolation);
bool ParseIsolation(std::string_view text, Isolation* isolation);

// How an isolated check ended (kNone: it returned, passed or failed an assertion).
enum class CaseEnd { kNone, kCrash, kTimeout };

struct IsolationOptions {
  Isolation mode = Isolation::kFork;
  double timeout_seconds = 60;  // a child running longer is killed: a "timeout" failure
  // Called in this process after every isolated check (in process: after every check), with
  // how it ended: an external engine's transport restarts the engine after a crash.
  std::function<void(CaseEnd)> after_case;
};

// How the last failing isolated check on this thread ended (kNone if it passed, or if the
// failure came from an RC_ASSERT in the check, which is an ordinary assertion failure).
CaseEnd LastCaseEnd();
void ClearLastCaseEnd();

// Installs `options` for the checks run on this thread during its lifetime.
class IsolationScope {
 public:
  explicit IsolationScope(const IsolationOptions& options);
  ~IsolationScope();
  IsolationScope(const IsolationScope&) = delete;
  IsolationScope& operator=(const IsolationScope&) = delete;

 private:
  IsolationOptions previous_;
};

const IsolationOptions& CurrentIsolation();

// Runs `check` as described above; the first form returns what `check` returned.
std::string RunIsolatedWithPayload(const std::function<std::string()>& check);
void RunIsolated(const std::function<void()>& check);

// Announces the step the check is about to take; a crash report names the last one.
// A no-op outside a forked child.
void NoteStep(std::string_view step);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_CASE_ISOLATION_H_
