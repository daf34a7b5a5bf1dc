#include "bench/append_steps.h"

#include <string>

#include "bench/machine_context.h"
#include "benchmark/benchmark.h"

namespace kvcheck::bench {

Tensor AppendInput(int64_t seq, float value) {
  return *Tensor::Filled(DType::kF32, {1, kAppendKvHeads, seq, kAppendHeadDim}, value);
}

void EvictCaches() {
  static std::vector<int64_t>* scratch = new std::vector<int64_t>(int64_t{64} << 20 >> 3, 1);
  int64_t sum = 0;
  for (size_t i = 0; i < scratch->size(); i += 8) sum += (*scratch)[i];
  benchmark::DoNotOptimize(sum);
}

std::vector<std::unique_ptr<KvCache>> PrefilledLayers(const CacheStrategy& strategy,
                                                      std::vector<CacheView>* views) {
  CacheConfig config = strategy.default_config;
  config.initial_capacity = 512;
  if (strategy.windowed) config.window = 4096;
  const Tensor prefill_k = AppendInput(kAppendPrefill, 1.0f);
  const Tensor prefill_v = AppendInput(kAppendPrefill, 2.0f);
  std::vector<std::unique_ptr<KvCache>> layers;
  for (int64_t l = 0; l < kAppendLayers; ++l) {
    layers.push_back(*strategy.create(config));
    views->push_back(*layers.back()->Append(prefill_k, prefill_v));
  }
  return layers;
}

bool WritesInPlace(const CacheStrategy& strategy) {
  const std::string name = strategy.name;
  return name == "prealloc" || name == "ring" || name == "interleaved" || name == "scattered";
}

int RunAppendBenchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  AddMachineContext();
  const CacheStrategy* prealloc = FindCacheStrategy("prealloc");
  for (int round = 0; round < 2; ++round) {
    std::vector<CacheView> views;
    const std::vector<std::unique_ptr<KvCache>> layers = PrefilledLayers(*prealloc, &views);
  }
  EvictCaches();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace kvcheck::bench
