#include "cli/progress_display.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvcheck::cli {
namespace {

using Clock = std::chrono::steady_clock;

int TerminalWidth(FILE* out) {
  winsize size{};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col;
  return 120;
}

}  // namespace

std::string EncodeProgress(const properties::DriverProgress& p) {
  return absl::StrFormat("%d %d %d %d %.2f", p.shrinking ? 1 : 0, p.cases, p.shrink_attempts,
                         p.shrinks_accepted, p.shrink_seconds);
}

bool DecodeProgress(const std::string& text, properties::DriverProgress* p) {
  int shrinking = 0;
  if (std::sscanf(text.c_str(), "%d %d %d %d %lf", &shrinking, &p->cases, &p->shrink_attempts,
                  &p->shrinks_accepted, &p->shrink_seconds) != 5) {
    return false;
  }
  p->shrinking = shrinking != 0;
  return true;
}

ProgressDisplay::ProgressDisplay(FILE* out, bool interactive, int jobs, bool verbose)
    : out_(out), interactive_(interactive), verbose_(verbose), jobs_(jobs) {}

void ProgressDisplay::Start(int job, std::string label, int total_cases, bool failure_expected) {
  Running& r = running_[job];
  r.label = std::move(label);
  r.total = total_cases;
  r.failure_expected = failure_expected;
  r.started = Clock::now();
  Redraw(true);
}

void ProgressDisplay::Update(int job, const properties::DriverProgress& progress) {
  auto found = running_.find(job);
  if (found == running_.end()) return;
  Running& r = found->second;
  r.progress = progress;
  if (!interactive_ && progress.shrinking && (verbose_ || !r.failure_expected) &&
      (progress.shrink_attempts == 1 || progress.shrink_seconds >= r.next_shrink_report)) {
    // The first line says shrinking started (its counts would be the first attempt's); the
    // later ones, every 5 s, how far it has come. The result says how it ended.
    if (progress.shrink_attempts == 1) {
      std::fprintf(out_, "%s failed after %d cases; shrinking it\n", r.label.c_str(),
                   progress.cases + 1);
    } else {
      std::fprintf(out_, "%s shrinking: %d attempts, %d smaller, %.1f s\n", r.label.c_str(),
                   progress.shrink_attempts, progress.shrinks_accepted, progress.shrink_seconds);
    }
    r.next_shrink_report = progress.shrink_seconds + 5.0;
    std::fflush(out_);
  }
  Heartbeat();
  Redraw(false);
}

void ProgressDisplay::Finish(int job, const std::string& line, bool notable) {
  running_.erase(job);
  ++finished_;
  if (notable || verbose_) {
    Print(line);
  } else {
    Heartbeat();
    Redraw(true);
  }
}

void ProgressDisplay::Heartbeat() {
  if (interactive_ || verbose_) return;
  const Clock::time_point now = Clock::now();
  if (now - last_heartbeat_ < std::chrono::seconds(30)) return;
  last_heartbeat_ = now;
  std::fprintf(out_, "kvcheck: %d of %d done, %.0f s\n", finished_, jobs_,
               std::chrono::duration<double>(now - started_).count());
  std::fflush(out_);
}

void ProgressDisplay::Print(const std::string& text) {
  ClearLine();
  std::fprintf(out_, "%s\n", text.c_str());
  Redraw(true);
}

void ProgressDisplay::ClearLine() {
  if (interactive_ && line_shown_) std::fprintf(out_, "\r\x1b[K");
  line_shown_ = false;
}

void ProgressDisplay::Redraw(bool force) {
  if (!interactive_ || running_.empty()) {
    std::fflush(out_);
    return;
  }
  // At most ten redraws a second: a fast property reports thousands of cases a second.
  const Clock::time_point now = Clock::now();
  if (!force && now - last_redraw_ < std::chrono::milliseconds(100)) return;
  last_redraw_ = now;
  std::string line = absl::StrFormat("[%d/%d done]", finished_, jobs_);
  for (const auto& [job, r] : running_) {
    const double seconds = std::chrono::duration<double>(now - r.started).count();
    if (r.progress.shrinking) {
      absl::StrAppendFormat(&line, "  %s: failed, shrinking %d attempts (%d smaller) %.0fs",
                            r.label, r.progress.shrink_attempts, r.progress.shrinks_accepted,
                            seconds);
    } else {
      absl::StrAppendFormat(&line, "  %s %d/%d %.0fs", r.label, r.progress.cases, r.total, seconds);
    }
  }
  const size_t width = static_cast<size_t>(TerminalWidth(out_)) - 1;
  if (line.size() > width) line = line.substr(0, width);
  std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  line_shown_ = true;
  std::fflush(out_);
}

}  // namespace kvcheck::cli
