// File: open_engine.h
// An engine as users name it (`kvcheck --engine=...`, KVCHECK_FUZZ_ENGINE): a plug-in library
// (a path ending in .so or .so.N, without spaces) is loaded in this process, or with
// `isolate` served by kvcheck_engine_host in a child process; anything else is a command that
// speaks the process protocol (PROTOCOL.md).
#ifndef KVCHECK_SRC_ENGINE_OPEN_ENGINE_H_
#define KVCHECK_SRC_ENGINE_OPEN_ENGINE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/engine/engine.h"

namespace kvcheck::engine {

struct OpenOptions {
  bool isolate = false;          // a plug-in through `host`, in its own process
  std::string host;              // the kvcheck_engine_host binary (for `isolate`)
  double timeout_seconds = 30;   // per request to a process engine
};

bool IsPluginPath(const std::string& spec);

// Errors: those of PluginEngine::Load or ProcessEngine::Start. A process engine is a
// ProcessEngine (callers that restart it between cases cast to it).
absl::StatusOr<std::shared_ptr<Engine>> OpenEngine(const std::string& spec,
                                                   const OpenOptions& options);

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_OPEN_ENGINE_H_
