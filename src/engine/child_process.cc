#include "src/engine/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvcheck::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` (0 when it has passed).
int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

Clock::time_point DeadlineIn(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

// Waits until `fd` is ready for `events`. Errors: kDeadlineExceeded.
absl::Status WaitFor(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, MillisLeft(deadline));
    if (n > 0) return absl::OkStatus();
    if (n == 0) return absl::DeadlineExceededError(absl::StrCat("no ", what, " before the deadline"));
    if (errno != EINTR) return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(const std::string& command) {
  // A write to an engine that has exited must be an error, not SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  char path[] = "/tmp/kvcheck-engine-stderr.XXXXXX";
  const int err = mkstemp(path);
  if (err < 0) return absl::InternalError(absl::StrCat("mkstemp: ", std::strerror(errno)));
  // The wrapper reports how the command ended (see the header).
  const std::string script = absl::StrCat(
      command, "\nstatus=$?\necho \"[engine exited with status $status]\" >&2\nexit $status\n");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err, 2);
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with a Kill right after Start
  close(in[0]);
  close(out[1]);
  close(err);
  // Non-blocking writes: a large payload to an engine that stopped reading must still meet the
  // deadline (poll, then partial writes).
  fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  std::unique_ptr<ChildProcess> child(new ChildProcess);
  child->pid_ = pid;
  child->owner_ = getpid();
  child->to_child_ = in[1];
  child->from_child_ = out[0];
  child->stderr_path_ = path;
  return child;
}

ChildProcess::~ChildProcess() {
  if (getpid() == owner_) {
    Kill();
    unlink(stderr_path_.c_str());
  }
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
}

absl::Status ChildProcess::Write(const std::string& data, double timeout_seconds) {
  const Clock::time_point deadline = DeadlineIn(timeout_seconds);
  size_t done = 0;
  while (done < data.size()) {
    if (absl::Status ready = WaitFor(to_child_, POLLOUT, deadline, "room in the engine's input");
        !ready.ok()) {
      return ready;
    }
    const ssize_t n = write(to_child_, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EPIPE) return absl::UnavailableError("the engine closed its input");
      return absl::InternalError(absl::StrCat("write: ", std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ChildProcess::ReadLine(double timeout_seconds, size_t max_bytes) {
  const Clock::time_point deadline = DeadlineIn(timeout_seconds);
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    if (buffered_.size() > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("a header line longer than ", max_bytes, " bytes"));
    }
    if (absl::Status ready = WaitFor(from_child_, POLLIN, deadline, "reply"); !ready.ok()) {
      return ready;
    }
    char chunk[65536];
    const ssize_t n = read(from_child_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::InternalError(absl::StrCat("read: ", std::strerror(errno)));
    }
    if (n == 0) return absl::UnavailableError("the engine closed its output");
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

absl::Status ChildProcess::ReadExactly(char* out, size_t size, double timeout_seconds) {
  const Clock::time_point deadline = DeadlineIn(timeout_seconds);
  const size_t from_buffer = std::min(size, buffered_.size());
  std::memcpy(out, buffered_.data(), from_buffer);
  buffered_.erase(0, from_buffer);
  size_t done = from_buffer;
  while (done < size) {
    if (absl::Status ready = WaitFor(from_child_, POLLIN, deadline, "payload"); !ready.ok()) {
      return ready;
    }
    const ssize_t n = read(from_child_, out + done, size - done);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::InternalError(absl::StrCat("read: ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::UnavailableError(
          absl::StrCat("the engine closed its output after ", done, " of ", size, " payload bytes"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

void ChildProcess::Kill() {
  if (pid_ <= 0 || getpid() != owner_) return;
  kill(-pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

bool ChildProcess::Running() {
  if (pid_ <= 0 || getpid() != owner_) return pid_ > 0;
  int status = 0;
  const pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done == pid_) {
    kill(-pid_, SIGKILL);  // whatever the shell left behind
    pid_ = -1;
    return false;
  }
  return true;
}

std::string ChildProcess::StderrTail(size_t max_bytes) const {
  FILE* f = std::fopen(stderr_path_.c_str(), "rb");
  if (f == nullptr) return "";
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  const long start = size > static_cast<long>(max_bytes) ? size - static_cast<long>(max_bytes) : 0;
  std::fseek(f, start, SEEK_SET);
  std::string tail(static_cast<size_t>(size - start), '\0');
  const size_t got = std::fread(tail.data(), 1, tail.size(), f);
  std::fclose(f);
  tail.resize(got);
  return tail;
}

}  // namespace kvcheck::engine
