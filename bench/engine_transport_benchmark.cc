// How fast an external engine can be driven, side by side in one run (issue 11's targets:
// the process transport sustains >= 2,000 decode-size operations per second; the plug-in
// path stays within 1.5x of the built-in path on the same strategy).
//
// One operation: a decode-size append, (B, KH, S, D) = (1, 8, 1, 64) f32, returning the
// visible K and V (kvcheck copies an engine's view: the ABI lets an engine reuse the memory
// after the next call); every 128 appends the cache is reset. The same prealloc strategy:
//   builtin          kvcheck's registry, in process
//   plugin           kvcheck's engine as a plug-in (dlopen), through ExternalCache
//   process_host     the same plug-in over the process protocol (kvcheck_engine_host)
//   process_python   a numpy cat cache over the protocol (engines/python/numpy_caches.py)
//
//   bazel run --config=opt //bench:engine_transport_benchmark
#include <fstream>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "src/cache/registry.h"
#include "src/engine/engine_entries.h"
#include "src/engine/plugin_engine.h"
#include "src/engine/process_engine.h"

namespace kvcheck {
namespace {

constexpr int64_t kTokensPerReset = 128;
const char* const kLibrary = "engines/kvcheck_builtin/libkvcheck_builtin_engine.so";

void DriveAppends(benchmark::State& state, const CacheStrategy& strategy) {
  CacheConfig config = strategy.default_config;
  absl::StatusOr<std::unique_ptr<KvCache>> cache = strategy.create(config);
  if (!cache.ok()) {
    state.SkipWithError(std::string(cache.status().message()).c_str());
    return;
  }
  const Tensor k = *Tensor::Filled(DType::kF32, {1, 8, 1, 64}, 1.0f);
  int64_t appended = 0;
  for (auto _ : state) {
    absl::StatusOr<CacheView> view = (*cache)->Append(k, k);
    if (!view.ok()) {
      state.SkipWithError(std::string(view.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(view);
    if (++appended % kTokensPerReset == 0) (*cache)->Reset();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(strategy.name);
}

const CacheStrategy* Named(const std::vector<CacheStrategy>& strategies, const char* name) {
  for (const CacheStrategy& s : strategies) {
    if (std::string(s.name) == name) return &s;
  }
  return nullptr;
}

void BM_Builtin(benchmark::State& state) { DriveAppends(state, *FindCacheStrategy("prealloc")); }

void BM_Plugin(benchmark::State& state) {
  static auto* strategies = [] {
    std::shared_ptr<engine::Engine> plugin = *engine::PluginEngine::Load(kLibrary);
    return new std::vector<CacheStrategy>(engine::EngineStrategies(plugin));
  }();
  DriveAppends(state, *Named(*strategies, "prealloc"));
}

void BM_ProcessHost(benchmark::State& state) {
  static auto* strategies = [] {
    std::shared_ptr<engine::Engine> process =
        *engine::ProcessEngine::Start(std::string("cli/kvcheck_engine_host ") + kLibrary, {30});
    return new std::vector<CacheStrategy>(engine::EngineStrategies(process));
  }();
  DriveAppends(state, *Named(*strategies, "prealloc"));
}

void BM_ProcessPython(benchmark::State& state) {
  static auto* strategies = [] {
    std::shared_ptr<engine::Engine> process = *engine::ProcessEngine::Start(
        "/usr/bin/python3 engines/python/numpy_caches.py", {30});
    return new std::vector<CacheStrategy>(engine::EngineStrategies(process));
  }();
  DriveAppends(state, *Named(*strategies, "numpy_cat"));
}

BENCHMARK(BM_Builtin);
BENCHMARK(BM_Plugin);
BENCHMARK(BM_ProcessHost);
BENCHMARK(BM_ProcessPython);

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) {
  benchmark::AddCustomContext("cpu", kvcheck::CpuModel());
  benchmark::AddCustomContext("simd", "not used (transport overhead only)");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
