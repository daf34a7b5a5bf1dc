// Dispatches per second of the Metal kernels on the SIMT emulator (src/metal/msl_cpu/), at
// the decode shapes of candle 0.11's attention measurements (9 query heads on 3 KV heads,
// D 64, f32) and at the property budget's sizes, next to the CPU flash kernel on the same
// inputs: what a property case through the emulator costs.
//
//   bazel run --config=opt //bench:metal_emulator_benchmark
#include <string>

#include "bench/cpu_model.h"
#include "benchmark/benchmark.h"
#include "src/attention/flash_attention.h"
#include "src/metal/metal_attention.h"

namespace kvcheck {
namespace {

Tensor Filled(std::vector<int64_t> shape, float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = scale * static_cast<float>((i * 37 % 101) - 50) / 50;
  return *Tensor::FromFloats(DType::kF32, shape, values);
}

// args: Skv, query rows (Sq); 9 query heads on 3 KV heads, D 64, causal.
enum class Kernel { kMetalVector, kMetalTiled, kFlash };

void Run(benchmark::State& state, Kernel kernel) {
  const int64_t skv = state.range(0), sq = state.range(1);
  const Tensor q = Filled({1, 9, sq, 64}, 1.0f), k = Filled({1, 3, skv, 64}, 1.0f),
               v = Filled({1, 3, skv, 64}, 1.0f);
  AttentionParams params;
  params.causal = true;
  for (auto _ : state) {
    absl::StatusOr<Tensor> out =
        kernel == Kernel::kMetalVector  ? metal_attention::MetalVectorAttention(q, k, v, params)
        : kernel == Kernel::kMetalTiled ? metal_attention::MetalTiledAttention(q, k, v, params)
                                        : FlashAttention(q, k, v, params, {.num_threads = 1});
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(kernel == Kernel::kMetalVector  ? "metal_vector on the emulator"
                 : kernel == Kernel::kMetalTiled ? "metal_tiled on the emulator"
                                                 : "flash, 1 thread");
}

void BM_MetalVector(benchmark::State& state) { Run(state, Kernel::kMetalVector); }
void BM_MetalTiled(benchmark::State& state) { Run(state, Kernel::kMetalTiled); }
void BM_Flash(benchmark::State& state) { Run(state, Kernel::kFlash); }

BENCHMARK(BM_MetalVector)->Args({1024, 1})->Args({4096, 1})->Args({320, 4})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MetalTiled)->Args({320, 4})->Args({320, 32})->Args({1024, 128})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Flash)->Args({1024, 1})->Args({4096, 1})->Args({320, 4})->Args({320, 32})->Args({1024, 128})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) {
  benchmark::AddCustomContext("cpu", kvcheck::bench::CpuModel());
  benchmark::AddCustomContext("simd", "emulator: scalar fibers; flash: Highway's best target");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
