#include "fuzz/engine_under_fuzz.h"

#include <cstdio>
#include <cstdlib>

#include "src/engine/engine_entries.h"
#include "src/engine/open_engine.h"

namespace kvcheck::fuzz {

const FuzzedEngine* EngineUnderFuzz() {
  static const FuzzedEngine* const fuzzed = []() -> const FuzzedEngine* {
    const char* spec = std::getenv("KVCHECK_FUZZ_ENGINE");
    if (spec == nullptr || spec[0] == '\0') return nullptr;
    absl::StatusOr<std::shared_ptr<engine::Engine>> loaded = engine::OpenEngine(spec, {});
    if (!loaded.ok()) {
      std::fprintf(stderr, "KVCHECK_FUZZ_ENGINE: %s\n", loaded.status().ToString().c_str());
      std::exit(2);
    }
    auto* f = new FuzzedEngine;
    f->engine = *std::move(loaded);
    f->strategies = engine::EngineStrategies(f->engine);
    f->kernels = engine::EngineKernels(f->engine);
    return f;
  }();
  return fuzzed;
}

}  // namespace kvcheck::fuzz
