// Attention benchmarks, side by side in one run (f32, 9 query heads, 3 KV heads, D = 64):
//
//  1. candle 0.11's CPU attention table, flash vs matmul + softmax (NaiveAttention on OpenBLAS
//     sgemm, KV heads repeated as repeat_kv does, and grouped without the copy): (Sq 512,
//     Skv 512, causal), (1, 1024), (1, 4096); 1 and 2 threads. Prefill reports GFLOP/s (2
//     flops per multiply-add, q k and p v, over the unmasked keys only); decode reports GB/s of
//     K/V read.
//  2. Streaming-read bandwidth of the same binary over the same working sets: one layer's K/V
//     for (1, 4096) read again and again (hot), and 30 distinct layers' K/V in turn (cold).
//  3. Decode attention over 30 distinct layers (cold K/V), as a model reads them; and the flash
//     decode paired with the streaming read of the same K/V, hot and cold, in alternating
//     order per iteration (BM_DecodePairedLayers: the decode's share of the floor measured in
//     the same seconds).
//  4. Flash decode over one layer in each input dtype (f16/bf16 K/V read at half the bytes)
//     and for a few query rows (Sq 4 and 8, causal: speculative decoding's short blocks).
//  5. Decode with a logit softcap, ALiBi or an additive mask, hot and cold; prefill with each.
//
//   bazel run --config=opt //bench:attention_benchmark [-- --simd_target=AVX2]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/benchmark_values.h"
#include "bench/machine_context.h"
#include "bench/streaming_sum.h"
#include "benchmark/benchmark.h"
#include "src/attention/flash_attention.h"
#include "src/attention/naive_attention.h"
#include "src/cache/registry.h"

namespace kvcheck {
namespace {

constexpr int64_t kHeads = 9;
constexpr int64_t kKvHeads = 3;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kLayers = 30;

// The values come from bench/benchmark_values.h, shared with the ggml peer (bench/peers/).
Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return *Tensor::FromFloats(DType::kF32, shape, bench::BenchmarkValues(count, seed));
}

// Keys each query may see: all, or (causal, bottom-right) i + 1 + Skv - Sq.
int64_t AllowedPairs(int64_t q_len, int64_t kv_len, bool causal) {
  if (!causal) return q_len * kv_len;
  int64_t pairs = 0;
  for (int64_t i = 0; i < q_len; ++i) pairs += std::min(kv_len, kv_len - q_len + i + 1);
  return pairs;
}

void ReportAttention(benchmark::State& state, int64_t q_len, int64_t kv_len, bool causal,
                     int64_t kv_bytes_per_call) {
  const double flops = 4.0 * kHeadDim * kHeads * AllowedPairs(q_len, kv_len, causal);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["KV_GB/s"] =
      benchmark::Counter(static_cast<double>(kv_bytes_per_call) * state.iterations() / 1e9,
                         benchmark::Counter::kIsRate);
}

enum Kernel { kFlash = 0, kNaiveRepeat = 1, kNaiveGrouped = 2 };
const char* const kKernelNames[] = {"flash", "naive_repeat_kv", "naive_grouped"};

absl::StatusOr<Tensor> RunKernel(int kernel, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const AttentionParams& params, int threads) {
  if (kernel == kFlash) return FlashAttention(q, k, v, params, {.num_threads = threads});
  return NaiveAttention(q, k, v, params, {.repeat_kv = kernel == kNaiveRepeat});
}

// candle 0.11's CPU attention table (flash_attn against matmul + softmax). Args: kernel, Sq,
// Skv, causal, threads.
void BM_SeedTable(benchmark::State& state) {
  const int kernel = static_cast<int>(state.range(0));
  const int64_t q_len = state.range(1), kv_len = state.range(2);
  const bool causal = state.range(3) != 0;
  const int threads = static_cast<int>(state.range(4));
  openblas_set_num_threads(threads);
  const Tensor q = Random({1, kHeads, q_len, kHeadDim}, 1);
  const Tensor k = Random({1, kKvHeads, kv_len, kHeadDim}, 2);
  const Tensor v = Random({1, kKvHeads, kv_len, kHeadDim}, 3);
  AttentionParams params;
  params.causal = causal;
  for (auto _ : state) {
    absl::StatusOr<Tensor> out = RunKernel(kernel, q, k, v, params, threads);
    benchmark::DoNotOptimize(out);
  }
  ReportAttention(state, q_len, kv_len, causal, 2 * kKvHeads * kv_len * kHeadDim * 4);
  state.SetLabel(kKernelNames[kernel]);
}

void SeedTableArgs(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (int kernel : {kFlash, kNaiveRepeat, kNaiveGrouped}) {
      b->Args({kernel, 512, 512, 1, threads});
      b->Args({kernel, 1, 1024, 0, threads});
      b->Args({kernel, 1, 4096, 0, threads});
      b->Args({kernel, 1, 128, 0, threads});
    }
  }
  b->ArgNames({"kernel", "Sq", "Skv", "causal", "threads"});
}
BENCHMARK(BM_SeedTable)->Apply(SeedTableArgs)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reads every float of `layers` (each a K and a V tensor) once: the streaming floor, with the
// widest vectors this CPU has (bench/streaming_sum.h), each array front to back or, when
// `interleaved`, as 8 streams side by side (InterleavedStreamingSum).
float SumAll(const std::vector<std::pair<Tensor, Tensor>>& layers, bool interleaved = false) {
  const auto sum_of = interleaved ? bench::InterleavedStreamingSum : bench::StreamingSum;
  float sum = 0;
  for (const auto& [k, v] : layers) {
    sum += sum_of(k.data<float>(), k.num_elements());
    sum += sum_of(v.data<float>(), v.num_elements());
  }
  return sum;
}

std::vector<std::pair<Tensor, Tensor>> Layers(int64_t count, int64_t kv_len) {
  std::vector<std::pair<Tensor, Tensor>> layers;
  for (int64_t l = 0; l < count; ++l) {
    layers.emplace_back(Random({1, kKvHeads, kv_len, kHeadDim}, 10 + 2 * l),
                        Random({1, kKvHeads, kv_len, kHeadDim}, 11 + 2 * l));
  }
  return layers;
}

// Streaming read of one layer's (hot) or 30 layers' (cold) K/V of 4096 positions, one thread.
void BM_StreamingRead(benchmark::State& state) {
  const auto layers = Layers(state.range(0), 4096);
  int64_t bytes = 0;
  for (const auto& [k, v] : layers) bytes += (k.num_elements() + v.num_elements()) * 4;
  for (auto _ : state) benchmark::DoNotOptimize(SumAll(layers));
  state.counters["KV_GB/s"] = benchmark::Counter(
      static_cast<double>(bytes) * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StreamingRead)->Arg(1)->Arg(kLayers)->ArgName("layers")->Unit(benchmark::kMillisecond);

// Decode (Sq = 1, Skv = 4096) over `layer_count` distinct layers in turn, each iteration
// calling `decode(q, k, v)` once per layer: 1 is the hot case (the layer stays in cache), 30
// the cold one. Reports GB/s of K/V read.
template <typename Decode>
void DecodeOverLayers(benchmark::State& state, int64_t layer_count, Decode decode) {
  const auto layers = Layers(layer_count, 4096);
  const Tensor q = Random({1, kHeads, 1, kHeadDim}, 5);
  for (auto _ : state) {
    for (const auto& [k, v] : layers) {
      absl::StatusOr<Tensor> out = decode(q, k, v);
      benchmark::DoNotOptimize(out);
    }
  }
  state.counters["KV_GB/s"] = benchmark::Counter(
      2.0 * kKvHeads * 4096 * kHeadDim * 4 * layer_count * state.iterations() / 1e9,
      benchmark::Counter::kIsRate);
}

// Args: kernel, layers, threads.
void BM_DecodeLayers(benchmark::State& state) {
  const int kernel = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(2));
  openblas_set_num_threads(threads);
  const AttentionParams params;
  DecodeOverLayers(state, state.range(1), [&](const Tensor& q, const Tensor& k, const Tensor& v) {
    return RunKernel(kernel, q, k, v, params, threads);
  });
  state.SetLabel(kKernelNames[kernel]);
}
BENCHMARK(BM_DecodeLayers)
    ->ArgsProduct({{kFlash, kNaiveGrouped}, {1, kLayers}, {1, 2}})
    ->ArgNames({"kernel", "layers", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The flash decode of BM_DecodeLayers (one thread) and the streaming read of BM_StreamingRead
// over the same layers, paired: each iteration times one decode over every layer and two
// streaming passes over the same K/V bytes, one before the decode and one after, so that all
// meet the same seconds of this VM's memory bandwidth, which moves by tens of percent from
// minute to minute (separate benchmarks of the two measured the cold ratio anywhere from 69%
// to 102%). The passes are of two kinds, in turn before and after: each array front to back,
// and each array as 8 streams side by side (SumAll's interleaved form), which some cores read
// much faster (a Zen 2 VM's one core read a decode step's weights 50% faster so); the floor
// is the faster kind. The reported time is the decode's; floor_share is the faster kind's
// total time over the decode's, the fraction of the streaming read the decode reaches, and
// front_share the same against the front-to-back kind alone (the floor before 2026-12-04
// 18:00 UTC). Args: layers (1 hot, 30 cold).
void BM_DecodePairedLayers(benchmark::State& state) {
  const auto layers = Layers(state.range(0), 4096);
  const Tensor q = Random({1, kHeads, 1, kHeadDim}, 5);
  const AttentionParams params;
  int64_t bytes = 0;
  for (const auto& [k, v] : layers) bytes += (k.num_elements() + v.num_elements()) * 4;
  using Clock = std::chrono::steady_clock;
  double decode_seconds = 0, front_seconds = 0, streams_seconds = 0;
  int64_t iteration = 0;
  for (auto _ : state) {
    const bool front_first = iteration++ % 2 == 0;
    auto pass = [&](bool front) {
      const Clock::time_point start = Clock::now();
      benchmark::DoNotOptimize(SumAll(layers, /*interleaved=*/!front));
      (front ? front_seconds : streams_seconds) +=
          std::chrono::duration<double>(Clock::now() - start).count();
    };
    pass(front_first);
    const Clock::time_point start = Clock::now();
    for (const auto& [k, v] : layers) {
      absl::StatusOr<Tensor> out = RunKernel(kFlash, q, k, v, params, 1);
      benchmark::DoNotOptimize(out);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    decode_seconds += seconds;
    state.SetIterationTime(seconds);
    pass(!front_first);
  }
  const double total = static_cast<double>(bytes) * static_cast<double>(state.iterations());
  state.counters["KV_GB/s"] = total / decode_seconds / 1e9;
  state.counters["stream_GB/s"] = total / front_seconds / 1e9;
  state.counters["streams8_GB/s"] = total / streams_seconds / 1e9;
  state.counters["floor_share"] = std::min(front_seconds, streams_seconds) / decode_seconds;
  state.counters["front_share"] = front_seconds / decode_seconds;
  state.SetLabel(kKernelNames[kFlash]);
}
BENCHMARK(BM_DecodePairedLayers)
    ->Arg(1)
    ->Arg(kLayers)
    ->ArgName("layers")
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// candle 0.11's "append + attention" decode loop: 30 layers, prefill 128, then 200 decode steps;
// every step appends one token to each layer's cache and attends over what it returns (the
// 30 caches are distinct, so K/V come from memory as in a model). Per strategy, three ways:
// repeat-KV matmul, grouped matmul without the copy, flash. Args: strategy index, kernel.
void BM_AppendAttendDecode(benchmark::State& state) {
  const CacheStrategy& strategy = CacheStrategies()[state.range(0)];
  const int kernel = static_cast<int>(state.range(1));
  openblas_set_num_threads(1);
  constexpr int64_t kPrefill = 128, kSteps = 200;
  CacheConfig config = strategy.default_config;
  config.initial_capacity = 512;
  if (strategy.windowed) config.window = 4096;
  const Tensor prefill_k = Random({1, kKvHeads, kPrefill, kHeadDim}, 21);
  const Tensor prefill_v = Random({1, kKvHeads, kPrefill, kHeadDim}, 22);
  const Tensor step_k = Random({1, kKvHeads, 1, kHeadDim}, 23);
  const Tensor step_v = Random({1, kKvHeads, 1, kHeadDim}, 24);
  const Tensor q = Random({1, kHeads, 1, kHeadDim}, 25);
  int64_t kv_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::unique_ptr<KvCache>> layers;
    for (int64_t l = 0; l < kLayers; ++l) {
      layers.push_back(*strategy.create(config));
      (void)layers.back()->Append(prefill_k, prefill_v);
    }
    state.ResumeTiming();
    for (int64_t step = 0; step < kSteps; ++step) {
      for (auto& layer : layers) {
        const absl::StatusOr<CacheView> view = layer->Append(step_k, step_v);
        AttentionParams params;
        params.kv_positions = view->positions;
        params.q_positions.assign(1, kPrefill + step);
        absl::StatusOr<Tensor> out = RunKernel(kernel, q, view->k, view->v, params, 1);
        benchmark::DoNotOptimize(out);
      }
    }
  }
  for (int64_t step = 0; step < kSteps; ++step) {
    kv_bytes += kLayers * 2 * kKvHeads * (kPrefill + step + 1) * kHeadDim * 4;
  }
  state.counters["step_time"] =
      benchmark::Counter(static_cast<double>(kSteps) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["KV_GB/s"] = benchmark::Counter(
      static_cast<double>(kv_bytes) * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(strategy.name) + " " + kKernelNames[kernel]);
}

void AppendAttendArgs(benchmark::internal::Benchmark* b) {
  for (int64_t s = 0; s < static_cast<int64_t>(CacheStrategies().size()); ++s) {
    for (int kernel : {kNaiveRepeat, kNaiveGrouped, kFlash}) b->Args({s, kernel});
  }
  b->ArgNames({"strategy", "kernel"});
}
BENCHMARK(BM_AppendAttendDecode)->Apply(AppendAttendArgs)->Unit(benchmark::kMillisecond);

// Flash decode over one layer's K/V (hot) with q, K and V in one dtype (f32, f16, bf16: the
// same values rounded), Sq query rows (causal when Sq > 1). Args: dtype, Sq, Skv, threads.
void BM_FlashDecode(benchmark::State& state) {
  const DType dtype = kAllDTypes[state.range(0)];
  const int64_t q_len = state.range(1), kv_len = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  auto values = [dtype](std::vector<int64_t> shape, uint32_t seed) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    return *Tensor::FromFloats(dtype, shape, bench::BenchmarkValues(count, seed));
  };
  const Tensor q = values({1, kHeads, q_len, kHeadDim}, 1);
  const Tensor k = values({1, kKvHeads, kv_len, kHeadDim}, 2);
  const Tensor v = values({1, kKvHeads, kv_len, kHeadDim}, 3);
  AttentionParams params;
  params.causal = q_len > 1;
  for (auto _ : state) {
    absl::StatusOr<Tensor> out = FlashAttention(q, k, v, params, {.num_threads = threads});
    benchmark::DoNotOptimize(out);
  }
  ReportAttention(state, q_len, kv_len, params.causal,
                  2 * kKvHeads * kv_len * kHeadDim * DTypeSize(dtype));
  state.SetLabel(DTypeName(dtype));
}
BENCHMARK(BM_FlashDecode)
    ->ArgsProduct({{0, 1, 2}, {1}, {1024, 4096}, {1, 2}})
    ->ArgsProduct({{0}, {4, 8}, {1024, 4096}, {1}})
    ->ArgNames({"dtype", "Sq", "Skv", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The per-score features of BM_DecodeFeatureLayers and BM_PrefillFeature, for Sq queries over
// Skv keys: 0, a logit softcap (Gemma 2's 50); 1, ALiBi slopes (BLOOM's for 9 heads:
// 2^(-8 (h + 1) / 9)); 2, an additive mask of one row per query for every head that removes
// the first 13 keys and adds 0 to the rest (a left-padded row of a batch, as a Hugging Face
// model passes its attention mask); 3, none; 4, every key's position given explicitly, the
// consecutive 0..Skv-1 (as an engine passes its cache's position table).
const char* const kFeatureNames[] = {"softcap", "alibi", "mask", "none", "kv_positions"};
AttentionParams FeatureParams(int64_t feature, int64_t q_len, int64_t kv_len) {
  AttentionParams params;
  if (feature == 0) {
    params.softcap = 50.0f;
  } else if (feature == 1) {
    for (int64_t h = 0; h < kHeads; ++h) {
      params.alibi_slopes.push_back(std::exp2(-8.0f * static_cast<float>(h + 1) / kHeads));
    }
  } else if (feature == 2) {
    Tensor mask = *Tensor::Zeros(DType::kF32, {1, 1, q_len, kv_len});
    for (int64_t i = 0; i < q_len; ++i) std::fill_n(mask.data<float>() + i * kv_len, 13, -INFINITY);
    params.mask = std::move(mask);
  } else if (feature == 4) {
    params.kv_positions.resize(kv_len);
    for (int64_t j = 0; j < kv_len; ++j) params.kv_positions[j] = j;
  }
  return params;
}

// Decode with a per-score feature (FeatureParams), (1, 4096) over 1 layer (hot) or 30
// distinct layers (cold), as BM_DecodeLayers. Args: feature (0 softcap, 1 ALiBi, 2 mask),
// layers, threads.
void BM_DecodeFeatureLayers(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(2));
  const int64_t feature = state.range(0);
  const AttentionParams params = FeatureParams(feature, 1, 4096);
  DecodeOverLayers(state, state.range(1), [&](const Tensor& q, const Tensor& k, const Tensor& v) {
    return FlashAttention(q, k, v, params, {.num_threads = threads});
  });
  state.SetLabel(kFeatureNames[feature]);
}
BENCHMARK(BM_DecodeFeatureLayers)
    ->ArgsProduct({{0, 1, 2}, {1, kLayers}, {1, 2}})
    ->ArgNames({"feature", "layers", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Prefill 512 x 512, causal, with a per-score feature (FeatureParams; 3: none, the flash
// row of candle 0.11's CPU attention table). GFLOP/s counts the causal pairs (the mask's 13
// removed keys per row too). Args: feature, threads.
void BM_PrefillFeature(benchmark::State& state) {
  const int64_t feature = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Tensor q = Random({1, kHeads, 512, kHeadDim}, 1);
  const Tensor k = Random({1, kKvHeads, 512, kHeadDim}, 2);
  const Tensor v = Random({1, kKvHeads, 512, kHeadDim}, 3);
  AttentionParams params = FeatureParams(feature, 512, 512);
  params.causal = true;
  for (auto _ : state) {
    absl::StatusOr<Tensor> out = FlashAttention(q, k, v, params, {.num_threads = threads});
    benchmark::DoNotOptimize(out);
  }
  ReportAttention(state, 512, 512, true, 2 * kKvHeads * 512 * kHeadDim * 4);
  state.SetLabel(kFeatureNames[feature]);
}
BENCHMARK(BM_PrefillFeature)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}})
    ->ArgNames({"feature", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kvcheck

// --simd_target=NAME (a Highway target name, e.g. AVX2): runs every kernel on that target
// instead of the best one this CPU supports, so that two targets compare on one machine.
// Taken out of argv before Google Benchmark parses it.
bool TakeSimdTargetFlag(int& argc, char** argv) {
  constexpr std::string_view kFlag = "--simd_target=";
  int kept = 1;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kFlag.size()) != kFlag) {
      argv[kept++] = argv[i];
      continue;
    }
    const std::string name(arg.substr(kFlag.size()));
    if (!kvcheck::PinSimdTarget(name)) {
      std::string known;
      for (const std::string& target : kvcheck::SupportedSimdTargets()) known += " " + target;
      std::fprintf(stderr,
                   "attention_benchmark: --simd_target=%s: not a target of this build "
                   "that this CPU runs (these are:%s)\n",
                   name.c_str(), known.c_str());
      ok = false;
    }
  }
  argc = kept;
  return ok;
}

int main(int argc, char** argv) {
  if (!TakeSimdTargetFlag(argc, argv)) return 1;
  return kvcheck::bench::RunWithMachineContext(argc, argv);
}
