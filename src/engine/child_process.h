// File: child_process.h
// ChildProcess: a command run through /bin/sh -c in its own process group, with pipes to its
// standard input and output and its standard error in a file, and reads and writes that give
// up after a deadline. The transport of the engine protocol (process_engine.h).
//
// The shell wrapper writes "[engine exited with status N]" to the stderr file when the command
// ends (N > 128: killed by signal N - 128), so that any process holding the pipes (a forked
// case, which cannot wait for the command) can tell how it ended.
#ifndef KVCHECK_SRC_ENGINE_CHILD_PROCESS_H_
#define KVCHECK_SRC_ENGINE_CHILD_PROCESS_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvcheck::engine {

class ChildProcess {
 public:
  // Starts `command`. Errors: kInternal when a pipe, the stderr file or fork fails.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const std::string& command);
  ~ChildProcess();  // kills the process group
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Writes all of `data`. Errors: kUnavailable when the command closed its input (exited),
  // kDeadlineExceeded after `timeout_seconds`.
  absl::Status Write(const std::string& data, double timeout_seconds);
  // Reads up to and including the next '\n' (returned without it); at most `max_bytes`.
  // Errors: kUnavailable at end of output, kDeadlineExceeded, kResourceExhausted past
  // max_bytes.
  absl::StatusOr<std::string> ReadLine(double timeout_seconds, size_t max_bytes);
  // Reads exactly `size` bytes into `out`. Errors: as ReadLine.
  absl::Status ReadExactly(char* out, size_t size, double timeout_seconds);

  // Kills the process group and reaps the shell (only in the process that started it).
  void Kill();
  // True while the shell runs (only meaningful in the process that started it).
  bool Running();
  // The last `max_bytes` of the command's standard error.
  std::string StderrTail(size_t max_bytes = 2000) const;

 private:
  ChildProcess() = default;
  // Bytes read past a line end, kept for the next read (a reply's header and payload may
  // arrive in one read).
  std::string buffered_;
  pid_t pid_ = -1;           // the shell, leader of its own process group
  pid_t owner_ = -1;         // the process that started it (a forked case may only talk to it)
  int to_child_ = -1;        // its stdin
  int from_child_ = -1;      // its stdout
  std::string stderr_path_;  // its stderr
};

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_CHILD_PROCESS_H_
