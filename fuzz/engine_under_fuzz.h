// File: engine_under_fuzz.h
// The external engine the fuzz targets check instead of kvcheck's own, named by the
// environment variable KVCHECK_FUZZ_ENGINE: a plug-in library (a path ending in .so) or a
// command speaking the process protocol (src/engine/PROTOCOL.md). The cache_ops target then
// drives the engine's strategies, the attention target its kernels, with the same oracles.
//
//   KVCHECK_FUZZ_ENGINE=/tmp/libengine.so tools/fuzz.sh cache_ops attention
#ifndef KVCHECK_FUZZ_ENGINE_UNDER_FUZZ_H_
#define KVCHECK_FUZZ_ENGINE_UNDER_FUZZ_H_

#include <memory>
#include <vector>

#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"
#include "src/engine/engine.h"

namespace kvcheck::fuzz {

struct FuzzedEngine {
  std::shared_ptr<engine::Engine> engine;
  std::vector<CacheStrategy> strategies;
  std::vector<AttentionKernel> kernels;
};

// The engine KVCHECK_FUZZ_ENGINE names, loaded once; nullptr when the variable is unset or
// empty. Exits with the reason when the engine cannot be loaded or started.
const FuzzedEngine* EngineUnderFuzz();

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_ENGINE_UNDER_FUZZ_H_
