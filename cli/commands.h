// File: commands.h
// The kvcheck subcommands. Each returns the process's exit code:
//   0  everything passed (run), every replayed case passes now (replay)
//   1  a property failed or a defect survived (run), a replayed case still fails (replay)
//   2  regressions against the --baseline report (run)
//   3  a usage error: unknown names, unreadable files, an engine that cannot be opened
#ifndef KVCHECK_CLI_COMMANDS_H_
#define KVCHECK_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "cli/settings.h"

namespace kvcheck::cli {

inline constexpr int kExitPassed = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitRegressed = 2;
inline constexpr int kExitUsage = 3;

// kvcheck run: the properties and the defect catalogue the settings select.
int RunCommand(const Settings& settings);

// kvcheck list [strategies|kernels|properties|defects]: names with one-line descriptions.
int ListCommand(const Settings& settings, const std::vector<std::string>& what);

// kvcheck replay FILE...: re-runs the case of each failure file.
int ReplayCommand(const Settings& settings, const std::vector<std::string>& files);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_COMMANDS_H_
