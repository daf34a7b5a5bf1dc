// File: engine_entries.h
// An external engine's strategies and kernels as registry entries (CacheStrategy,
// AttentionKernel), so that every property that iterates a registry runs on them: an
// external engine looks exactly like a registry entry.
//
// Flags map one to one: WINDOWED -> windowed, PER_ROW -> per_row, FORK -> forks, RESET ->
// resets (a strategy without Reset still resets, by re-creation: external_cache.h), STATS ->
// reports_storage, AMORTIZED_GROWTH (with STATS) -> amortized_growth, MAX_BYTES ->
// honours_max_bytes; kernel features -> KernelFeature bits (the same values).
#ifndef KVCHECK_SRC_ENGINE_ENGINE_ENTRIES_H_
#define KVCHECK_SRC_ENGINE_ENGINE_ENTRIES_H_

#include <memory>
#include <vector>

#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"
#include "src/engine/engine.h"

namespace kvcheck::engine {

// The entries keep `engine` alive; their names point into engine->info().
std::vector<CacheStrategy> EngineStrategies(const std::shared_ptr<Engine>& engine);
// A kernel entry validates its inputs (ValidateAttention) and refuses a call that uses a
// feature the kernel did not declare (kUnimplemented, naming it) before the engine sees it.
std::vector<AttentionKernel> EngineKernels(const std::shared_ptr<Engine>& engine);

// The features a call uses (KernelFeature bits).
uint32_t FeaturesUsed(const Tensor& q, const Tensor& k, const AttentionParams& params);

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_ENGINE_ENTRIES_H_
