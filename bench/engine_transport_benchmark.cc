// How fast an external engine can be driven, side by side in one run (the targets:
// the process transport sustains >= 2,000 decode-size operations per second; the plug-in
// path stays within 1.5x of the built-in path on the same strategy).
//
// One operation: a decode-size append, (B, KH, S, D) = (1, KH, 1, D) f32, returning the
// visible K and V (kvcheck borrows an engine's view, and copies it only if it still holds it
// at the next call on that cache: the ABI lets an engine reuse the memory then); every R
// appends the cache is reset, so a reply carries R/2 tokens on average. Two sizes: the state
// machine's (KH 2, D 16, R 32) and a model's (KH 8, D 64, R 128: 256 KiB per reply on
// average). The same prealloc strategy:
//   builtin          kvcheck's registry, in process
//   plugin           kvcheck's engine as a plug-in (dlopen), through ExternalCache
//   process_host     the same plug-in over the process protocol (kvcheck_engine_host)
//   process_python   a numpy cat cache over the protocol (engines/python/numpy_caches.py)
//
//   bazel run --config=opt //bench:engine_transport_benchmark
#include <memory>
#include <string>

#include "bench/cpu_model.h"
#include "benchmark/benchmark.h"
#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"
#include "src/engine/engine_entries.h"
#include "src/engine/plugin_engine.h"
#include "src/engine/process_engine.h"

namespace kvcheck {
namespace {

const char* const kLibrary = "engines/kvcheck_builtin/libkvcheck_builtin_engine.so";

void DriveAppends(benchmark::State& state, const CacheStrategy& strategy) {
  CacheConfig config = strategy.default_config;
  absl::StatusOr<std::unique_ptr<KvCache>> cache = strategy.create(config);
  if (!cache.ok()) {
    state.SkipWithError(std::string(cache.status().message()).c_str());
    return;
  }
  const int64_t heads = state.range(0), head_dim = state.range(1), reset_every = state.range(2);
  const Tensor k = *Tensor::Filled(DType::kF32, {1, heads, 1, head_dim}, 1.0f);
  int64_t appended = 0;
  for (auto _ : state) {
    absl::StatusOr<CacheView> view = (*cache)->Append(k, k);
    if (!view.ok()) {
      state.SkipWithError(std::string(view.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(view);
    if (++appended % reset_every == 0) (*cache)->Reset();
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

// The same comparison for an attention call: decode (Sq = 1) over Skv = 512 keys, 8 query
// heads on 2 KV heads, D = 64, f32, the flash kernel, built in and through the plug-in.
void DriveAttention(benchmark::State& state, const AttentionKernel& kernel) {
  const Tensor q = *Tensor::Filled(DType::kF32, {1, 8, 1, 64}, 0.5f);
  const Tensor kv = *Tensor::Filled(DType::kF32, {1, 2, 512, 64}, 0.25f);
  AttentionParams params;
  params.causal = true;
  for (auto _ : state) {
    absl::StatusOr<Tensor> out = kernel.run(q, kv, kv, params, 1);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(kernel.name);
}

void BM_AttendBuiltin(benchmark::State& state) {
  DriveAttention(state, *FindAttentionKernel("flash"));
}

void BM_AttendPlugin(benchmark::State& state) {
  static auto* kernels = [] {
    std::shared_ptr<engine::Engine> plugin = *engine::PluginEngine::Load(kLibrary);
    return new std::vector<AttentionKernel>(engine::EngineKernels(plugin));
  }();
  for (const AttentionKernel& kernel : *kernels) {
    if (std::string(kernel.name) == "flash") return DriveAttention(state, kernel);
  }
}

void BM_AttendProcessHost(benchmark::State& state) {
  static auto* kernels = [] {
    std::shared_ptr<engine::Engine> process =
        *engine::ProcessEngine::Start(std::string("cli/kvcheck_engine_host ") + kLibrary, {30});
    return new std::vector<AttentionKernel>(engine::EngineKernels(process));
  }();
  for (const AttentionKernel& kernel : *kernels) {
    if (std::string(kernel.name) == "flash") return DriveAttention(state, kernel);
  }
}

// Wall time: a process engine's work happens in another process.
void Sizes(benchmark::internal::Benchmark* b) {
  b->Args({2, 16, 32})->Args({8, 64, 128})->ArgNames({"KH", "D", "R"})->UseRealTime();
}
BENCHMARK(BM_Builtin)->Apply(Sizes);
BENCHMARK(BM_Plugin)->Apply(Sizes);
BENCHMARK(BM_ProcessHost)->Apply(Sizes);
BENCHMARK(BM_ProcessPython)->Apply(Sizes);
BENCHMARK(BM_AttendBuiltin)->UseRealTime();
BENCHMARK(BM_AttendPlugin)->UseRealTime();
BENCHMARK(BM_AttendProcessHost)->UseRealTime();

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) {
  benchmark::AddCustomContext("cpu", kvcheck::bench::CpuModel());
  benchmark::AddCustomContext("simd", "not used (transport overhead only)");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
