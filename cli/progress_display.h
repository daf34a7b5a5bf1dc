// File: progress_display.h
// What the terminal shows while properties run. On a terminal: one live line, redrawn, with
// every running property's cases (or shrink attempts) and seconds. Otherwise (a CI log): a
// line when a property starts shrinking and every 5 seconds of shrinking, so that the log
// shows where the time goes. Every property ends with one permanent line either way.
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
  ProgressDisplay(FILE* out, bool interactive, int jobs);

  void Start(int job, std::string label, int total_cases);
  void Update(int job, const properties::DriverProgress& progress);
  // Ends job's live entry and prints `line` (a newline is added).
  void Finish(int job, const std::string& line);
  // Prints a line above the live one.
  void Print(const std::string& text);

 private:
  struct Running {
    std::string label;
    int total = 0;
    properties::DriverProgress progress;
    std::chrono::steady_clock::time_point started;
    double next_shrink_report = 0;
  };
  void Redraw(bool force);
  void ClearLine();

  FILE* out_;
  bool interactive_;
  int jobs_;
  int finished_ = 0;
  std::map<int, Running> running_;
  std::chrono::steady_clock::time_point last_redraw_;
  bool line_shown_ = false;
};

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_PROGRESS_DISPLAY_H_
