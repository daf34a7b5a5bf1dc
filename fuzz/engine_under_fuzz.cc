#include "fuzz/engine_under_fuzz.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "src/engine/engine_entries.h"
#include "src/engine/plugin_engine.h"
#include "src/engine/process_engine.h"

namespace kvcheck::fuzz {

const FuzzedEngine* EngineUnderFuzz() {
  static const FuzzedEngine* const fuzzed = []() -> const FuzzedEngine* {
    const char* spec = std::getenv("KVCHECK_FUZZ_ENGINE");
    if (spec == nullptr || spec[0] == '\0') return nullptr;
    const std::string name = spec;
    std::shared_ptr<engine::Engine> loaded;
    if (name.find(' ') == std::string::npos && absl::EndsWith(name, ".so")) {
      absl::StatusOr<std::unique_ptr<engine::PluginEngine>> plugin =
          engine::PluginEngine::Load(name);
      if (!plugin.ok()) {
        std::fprintf(stderr, "KVCHECK_FUZZ_ENGINE: %s\n", plugin.status().ToString().c_str());
        std::exit(2);
      }
      loaded = *std::move(plugin);
    } else {
      absl::StatusOr<std::unique_ptr<engine::ProcessEngine>> process =
          engine::ProcessEngine::Start(name, {30});
      if (!process.ok()) {
        std::fprintf(stderr, "KVCHECK_FUZZ_ENGINE: %s\n", process.status().ToString().c_str());
        std::exit(2);
      }
      loaded = *std::move(process);
    }
    auto* f = new FuzzedEngine;
    f->engine = loaded;
    f->strategies = engine::EngineStrategies(loaded);
    f->kernels = engine::EngineKernels(loaded);
    return f;
  }();
  return fuzzed;
}

}  // namespace kvcheck::fuzz
