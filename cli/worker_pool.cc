#include "cli/worker_pool.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvcheck::cli {
namespace {

// A frame on a worker's pipe: one byte of kind, 8 bytes of length, the bytes.
constexpr char kProgressFrame = 'P';
constexpr char kResultFrame = 'R';

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteFrame(int fd, char kind, const std::string& bytes) {
  const uint64_t size = bytes.size();
  char header[9];
  header[0] = kind;
  std::memcpy(header + 1, &size, sizeof size);
  return WriteAll(fd, header, sizeof header) && WriteAll(fd, bytes.data(), bytes.size());
}

struct Worker {
  size_t job = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;  // bytes read, not yet a whole frame
  bool has_result = false;
  std::string result;
};

// Hands every whole frame in worker.buffer to the callbacks.
void TakeFrames(Worker& worker, const WorkerPoolCallbacks& callbacks) {
  while (worker.buffer.size() >= 9) {
    uint64_t size;
    std::memcpy(&size, worker.buffer.data() + 1, sizeof size);
    if (worker.buffer.size() < 9 + size) return;
    const char kind = worker.buffer[0];
    std::string bytes = worker.buffer.substr(9, size);
    worker.buffer.erase(0, 9 + size);
    if (kind == kProgressFrame) {
      if (callbacks.on_progress) callbacks.on_progress(worker.job, bytes);
    } else {
      worker.has_result = true;
      worker.result = std::move(bytes);
    }
  }
}

std::string ExitDescription(int status) {
  if (WIFSIGNALED(status)) return absl::StrCat("was killed by signal ", WTERMSIG(status));
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  return "ended";
}

size_t RunHere(size_t count, const WorkerPoolCallbacks& callbacks) {
  size_t started = 0;
  for (size_t i = 0; i < count; ++i) {
    if (callbacks.may_start && !callbacks.may_start()) break;
    ++started;
    std::string result = callbacks.run(i, [&](const std::string& text) {
      if (callbacks.on_progress) callbacks.on_progress(i, text);
    });
    callbacks.on_done(i, std::move(result));
  }
  return started;
}

}  // namespace

size_t RunInWorkers(size_t count, int workers, const WorkerPoolCallbacks& callbacks) {
  if (workers <= 1) return RunHere(count, callbacks);
  std::vector<Worker> running;
  size_t next = 0;
  bool stopped = false;
  while (next < count || !running.empty()) {
    while (!stopped && next < count && running.size() < static_cast<size_t>(workers)) {
      if (callbacks.may_start && !callbacks.may_start()) {
        stopped = true;
        break;
      }
      int fds[2];
      if (pipe(fds) != 0) {
        callbacks.on_done(next++, absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno))));
        continue;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        const size_t job = next;
        const std::string result = callbacks.run(job, [fd = fds[1]](const std::string& text) {
          WriteFrame(fd, kProgressFrame, text);
        });
        const bool sent = WriteFrame(fds[1], kResultFrame, result);
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(sent ? 0 : 1);  // no atexit handlers or destructors of the parent's objects
      }
      close(fds[1]);
      if (pid < 0) {
        close(fds[0]);
        callbacks.on_done(next++, absl::InternalError(absl::StrCat("fork: ", std::strerror(errno))));
        continue;
      }
      Worker worker;
      worker.job = next++;
      worker.pid = pid;
      worker.fd = fds[0];
      running.push_back(std::move(worker));
    }
    if (running.empty()) break;
    std::vector<pollfd> polled;
    for (const Worker& worker : running) polled.push_back({worker.fd, POLLIN, 0});
    if (poll(polled.data(), polled.size(), -1) < 0 && errno != EINTR) break;
    for (size_t w = 0; w < running.size();) {
      Worker& worker = running[w];
      bool ended = false;
      if (polled[w].revents & (POLLIN | POLLHUP | POLLERR)) {
        char chunk[1 << 16];
        const ssize_t n = read(worker.fd, chunk, sizeof chunk);
        if (n > 0) {
          worker.buffer.append(chunk, static_cast<size_t>(n));
          TakeFrames(worker, callbacks);
        } else if (n == 0 || errno != EINTR) {
          ended = true;
        }
      }
      if (!ended) {
        ++w;
        continue;
      }
      close(worker.fd);
      int status = 0;
      while (waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (worker.has_result) {
        callbacks.on_done(worker.job, std::move(worker.result));
      } else {
        callbacks.on_done(worker.job,
                          absl::InternalError(absl::StrCat("the worker process ",
                                                           ExitDescription(status),
                                                           " before sending its result")));
      }
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(w));
      polled.erase(polled.begin() + static_cast<std::ptrdiff_t>(w));
    }
  }
  return next;
}

}  // namespace kvcheck::cli
