// File: settings.h
// The kvcheck command's settings, read from its flags once (kvcheck_main.cc) and handed to the
// subcommands (commands.h), which never read flags themselves.
#ifndef KVCHECK_CLI_SETTINGS_H_
#define KVCHECK_CLI_SETTINGS_H_

#include <cstdint>
#include <string>

#include "cli/selection.h"
#include "properties/case_isolation.h"
#include "reference/reference_attention.h"

namespace kvcheck::cli {

// What to check: kvcheck's own engine or an external one (src/engine/).
struct EngineSettings {
  std::string spec;          // --engine: a plug-in .so or a process command; empty: built-in
  bool isolate = false;      // --isolate
  double timeout = 30;       // --engine_timeout
  bool restart_every_case = false;  // --engine_restart=case
  std::string host;          // --engine_host (default: next to kvcheck)
};

struct Settings {
  std::string command_line;
  EngineSettings engine;
  uint64_t seed = 20261129;
  int cases = 0;             // every property runs exactly this many (0: defaults)
  double case_scale = 1.0;
  NameSelection strategies, kernels, dtypes, properties, defects;
  bool run_defects = true;   // --defects: the catalogue after the properties
  std::string reproduce;
  properties::Isolation isolation = properties::Isolation::kFork;
  double case_timeout = 60;
  double shrink_seconds = 20;
  int shrink_attempts = 2000;
  std::string oracle = "dd";   // --oracle: dd, real or real100 (reference_attention.h)
  double max_seconds = 0;       // the whole run (0: no limit)
  double property_seconds = 0;  // each property (0: no limit)
  int threads = 1;
  std::string failures_dir;     // resolved against the user's directory
  std::string report_dir;       // empty: no report files
  std::string baseline;         // empty: no comparison
  bool verbose = false;         // --verbose: every property's line and the detailed tables
};

// A path as the user typed it, made absolute against the directory kvcheck was started from
// (`bazel run` starts it elsewhere and says where the user was in BUILD_WORKING_DIRECTORY).
std::string UserPath(const std::string& path);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_SETTINGS_H_
