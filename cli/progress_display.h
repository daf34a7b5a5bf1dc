// File: progress_display.h
// What the terminal shows while properties run. On a terminal: one live line, redrawn, with
// every running property's cases (or shrink attempts) and seconds. Otherwise (a CI log): a
// line when a property starts shrinking and every 5 seconds of shrinking, so that the log
// shows where the time goes, and every 30 seconds how many jobs are done. A job's end is a
// permanent line when it is notable (a failure, a surviving defect, a time limit) or the
// display is verbose; a passing run's output stays one screen.
#ifndef KVCHECK_CLI_PROGRESS_DISPLAY_H_
#define KVCHECK_CLI_PROGRESS_DISPLAY_H_

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "properties/property_driver.h"

namespace kvcheck::cli {

// DriverProgress as one line of text (what a worker sends its parent) and back.
std::string EncodeProgress(const properties::DriverProgress& progress);
bool DecodeProgress(const std::string& text, properties::DriverProgress* progress);

class ProgressDisplay {
 public:
  ProgressDisplay(FILE* out, bool interactive, int jobs, bool verbose = false);

  // `failure_expected`: a defect's kill, whose shrinking a CI log shows only when verbose.
  void Start(int job, std::string label, int total_cases, bool failure_expected = false);
  void Update(int job, const properties::DriverProgress& progress);
  // Ends job's live entry and prints `line` (a newline is added) if it is notable or the
  // display verbose.
  void Finish(int job, const std::string& line, bool notable = true);
  // Prints a line above the live one.
  void Print(const std::string& text);

 private:
  struct Running {
    std::string label;
    int total = 0;
    bool failure_expected = false;
    properties::DriverProgress progress;
    std::chrono::steady_clock::time_point started;
    double next_shrink_report = 0;
  };
  void Redraw(bool force);
  void ClearLine();
  // In a CI log: "kvcheck: N of M done, S s" at most every 30 seconds.
  void Heartbeat();

  FILE* out_;
  bool interactive_;
  bool verbose_;
  int jobs_;
  int finished_ = 0;
  std::map<int, Running> running_;
  std::chrono::steady_clock::time_point last_redraw_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_heartbeat_ = started_;
  bool line_shown_ = false;
};

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_PROGRESS_DISPLAY_H_
