// The seed document's append experiment: a SmolLM2-like stack of 30 layers, 3 KV heads, head
// dim 64, f32; prefill 128 positions, then 200 decode steps of one token into every layer.
// Reports the time per decode step (all 30 layers) for each registered strategy, appending
// with Append (a new view per append: BM_AppendDecode) and with AppendInto (each layer's view
// kept and updated: BM_AppendIntoDecode), next to its floor (the fastest of a plain and four
// prefetching copies of the same bytes into the same slots of the same strategy's buffers),
// and the bytes each step writes. BM_FloorAndView adds to the floor's copy what every
// append's returned view costs (copying and dropping two tensors with reference-counted
// storage), to show how much of the gap to the floor that is.
//
//   bazel run --config=opt //bench:cache_append_benchmark
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/machine_context.h"
#include "benchmark/benchmark.h"
#include "src/cache/registry.h"

namespace kvcheck {
namespace {

constexpr int64_t kLayers = 30;
constexpr int64_t kKvHeads = 3;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kPrefill = 128;
constexpr int64_t kDecodeSteps = 200;
// Bytes one decode step writes: K and V, one token, every layer.
constexpr int64_t kBytesPerStep = kLayers * 2 * kKvHeads * kHeadDim * sizeof(float);

Tensor Filled(int64_t seq, float value) {
  return *Tensor::Filled(DType::kF32, {1, kKvHeads, seq, kHeadDim}, value);
}

// Reads 64 MiB (twice the last-level cache of the development machine) so that every
// iteration starts from the same, cold cache state, as a decode step does in a model whose
// weights stream through the caches between two appends to a layer. Untimed.
void EvictCaches() {
  static std::vector<int64_t>* scratch = new std::vector<int64_t>(int64_t{64} << 20 >> 3, 1);
  int64_t sum = 0;
  for (size_t i = 0; i < scratch->size(); i += 8) sum += (*scratch)[i];
  benchmark::DoNotOptimize(sum);
}

// Times `steps` alone, as the iteration's manual time (benchmarks registered with
// UseManualTime): making the caches (fresh pages from the kernel), reading 64 MiB and freeing
// it all stay outside the measurement. With Pause/ResumeTiming, the end of an iteration's
// scope (its vectors freed, after which malloc may hand the top of the heap back to the
// kernel) was timed too: in one run, of the 10.3 us per step reported for 30 view updates
// alone, 0.6 were spent in the steps (the TSC read around them), and of 14.2 us for 30
// copies of a step's rows, 5.5.
template <typename Steps>
void TimeSteps(benchmark::State& state, Steps steps) {
  const auto start = std::chrono::steady_clock::now();
  steps();
  const auto end = std::chrono::steady_clock::now();
  state.SetIterationTime(std::chrono::duration<double>(end - start).count());
}

void ReportPerStep(benchmark::State& state) {
  // Seconds per decode step (all layers), from the measured time per iteration.
  state.counters["step_time"] =
      benchmark::Counter(static_cast<double>(kDecodeSteps) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_step"] = static_cast<double>(kBytesPerStep);
  state.SetBytesProcessed(kBytesPerStep * kDecodeSteps * state.iterations());
}

// A strategy's 30 caches, each prefilled with 128 positions, and the views the prefill returned.
std::vector<std::unique_ptr<KvCache>> PrefilledLayers(const CacheStrategy& strategy,
                                                      std::vector<CacheView>* views) {
  CacheConfig config = strategy.default_config;
  config.initial_capacity = 512;
  if (strategy.windowed) config.window = 4096;
  const Tensor prefill_k = Filled(kPrefill, 1.0f), prefill_v = Filled(kPrefill, 2.0f);
  std::vector<std::unique_ptr<KvCache>> layers;
  for (int64_t l = 0; l < kLayers; ++l) {
    layers.push_back(*strategy.create(config));
    views->push_back(*layers.back()->Append(prefill_k, prefill_v));
  }
  return layers;
}

// The decode steps, two ways: `kept_views` false, each append returns a new view that the
// caller drops (Append); true, each layer's view (the prefill's at first) is kept across the
// steps and every append writes into it (AppendInto), as a decode loop that keeps one view
// per layer does.
void BM_AppendDecode(benchmark::State& state, const CacheStrategy* strategy, bool kept_views) {
  const Tensor step_k = Filled(1, 3.0f), step_v = Filled(1, 4.0f);
  for (auto _ : state) {
    std::vector<CacheView> views;
    std::vector<std::unique_ptr<KvCache>> layers = PrefilledLayers(*strategy, &views);
    if (!kept_views) views.clear();  // no view across steps
    EvictCaches();
    TimeSteps(state, [&] {
      for (int64_t step = 0; step < kDecodeSteps; ++step) {
        for (size_t l = 0; l < layers.size(); ++l) {
          if (kept_views) {
            absl::Status status = layers[l]->AppendInto(step_k, step_v, views[l]);
            benchmark::DoNotOptimize(status);
          } else {
            absl::StatusOr<CacheView> view = layers[l]->Append(step_k, step_v);
            benchmark::DoNotOptimize(view);
          }
        }
      }
    });
  }
  ReportPerStep(state);
}

// When a floor copy prefetches the rows the next step writes: not at all, after the step's
// rows are copied, or before.
enum class Prefetch { kNone, kAfterCopy, kBeforeCopy };
// How: for writing into the first-level cache (prefetchw on x86), or for reading into the
// second-level cache (prefetcht1), which is what the caches do (SlotBuffers::PrefetchSlot).
enum class PrefetchTo { kL1ForWriting, kL2 };

struct FloorCopy {
  const char* name;
  Prefetch when;
  PrefetchTo to;
};

// A strategy's floor: the same bytes copied row by row (one 256-byte row per head) into the
// same slots of the same buffers, with no bookkeeping: the buffers of that strategy's
// freshly prefilled caches (prealloc's (1, KH, capacity, D) buffers, ring's and scattered's
// 4096-slot ones, interleaved's (1, capacity, KH, 2D) one), so both write into memory of the
// same layout in the same state. Position p lives in slot p in all four until a ring wraps
// (it does not here). Five copies, and the floor is the fastest: a plain memcpy, and four
// that also prefetch the next step's rows, after the copy or before it, for writing into the
// first-level cache or for reading into the second. A cold row's stores otherwise stall the
// next instructions, so a copy that does not prefetch is not a floor for one that does; and
// what is fastest depends on the layout and the machine. On a Zen 4 VM the second-level
// prefetch halved the copy (2.4-3.5 against 5.0-5.2 us per step with prefetchw; the floor of
// the earlier rounds had only prefetchw, so it was not a floor). The caches prefetch first,
// into the second level (SlotBuffers::PrefetchSlot).
//
// Not a floor, but where the rest goes: with `with_view`, the copy that prefetches first also
// copies and drops the layer's two view tensors, as each append returns a view the caller then
// drops; their storage is reference counted, so that is two locked increments and two locked
// decrements.
void BM_CopySameBytes(benchmark::State& state, const CacheStrategy* strategy, FloorCopy floor,
                      bool with_view) {
  const Prefetch prefetch = floor.when;
  const std::vector<float> k_row(kKvHeads * kHeadDim, 3.0f), v_row(kKvHeads * kHeadDim, 4.0f);
  for (auto _ : state) {
    std::vector<CacheView> views;
    std::vector<std::unique_ptr<KvCache>> layers = PrefilledLayers(*strategy, &views);
    // Row (h, slot) of a (1, KH, slots, D) view (strided for interleaved's halves).
    auto row = [](const Tensor& view, int64_t h, int64_t slot) {
      return view.data<float>() + h * view.strides()[1] + slot * view.strides()[2];
    };
    const size_t row_bytes = views[0].k.dim(3) * sizeof(float);  // a run-time size
    auto prefetch_slot = [&](const CacheView& view, int64_t slot) {
      for (int64_t h = 0; h < kKvHeads; ++h) {
        const char* k_row = reinterpret_cast<const char*>(row(view.k, h, slot));
        const char* v_row = reinterpret_cast<const char*>(row(view.v, h, slot));
        for (size_t line = 0; line < row_bytes; line += 64) {
          if (floor.to == PrefetchTo::kL2) {
            __builtin_prefetch(k_row + line, /*rw=*/0, /*locality=*/2);
            __builtin_prefetch(v_row + line, /*rw=*/0, /*locality=*/2);
          } else {
            __builtin_prefetch(k_row + line, /*rw=*/1, /*locality=*/3);
            __builtin_prefetch(v_row + line, /*rw=*/1, /*locality=*/3);
          }
        }
      }
    };
    EvictCaches();
    TimeSteps(state, [&] {
      for (int64_t step = 0; step < kDecodeSteps; ++step) {
        const int64_t position = kPrefill + step;
        for (const CacheView& view : views) {
          if (prefetch == Prefetch::kBeforeCopy) prefetch_slot(view, position + 1);
          for (int64_t h = 0; h < kKvHeads; ++h) {
            std::memcpy(row(view.k, h, position), &k_row[h * kHeadDim], row_bytes);
          }
          for (int64_t h = 0; h < kKvHeads; ++h) {
            std::memcpy(row(view.v, h, position), &v_row[h * kHeadDim], row_bytes);
          }
          if (with_view) {
            Tensor k = view.k, v = view.v;
            benchmark::DoNotOptimize(k);
            benchmark::DoNotOptimize(v);
          }
          if (prefetch == Prefetch::kAfterCopy) prefetch_slot(view, position + 1);
        }
        benchmark::ClobberMemory();
      }
    });
  }
  ReportPerStep(state);
}

// The strategies that append into buffers a view points into; concat's and paged's views
// are new copies (of the whole history), so no copy of one row into "the same slots" exists.
bool WritesInPlace(const CacheStrategy& strategy) {
  const std::string name = strategy.name;
  return name == "prealloc" || name == "ring" || name == "interleaved" || name == "scattered";
}

const bool registered = [] {
  for (const CacheStrategy& strategy : CacheStrategies()) {
    const std::string name = strategy.name;
    benchmark::RegisterBenchmark(("BM_AppendDecode/" + name).c_str(), BM_AppendDecode, &strategy,
                                 false)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_AppendIntoDecode/" + name).c_str(), BM_AppendDecode,
                                 &strategy, true)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    if (!WritesInPlace(strategy)) continue;
    const FloorCopy floors[] = {
        {"memcpy", Prefetch::kNone, PrefetchTo::kL2},
        {"copy_then_prefetchw", Prefetch::kAfterCopy, PrefetchTo::kL1ForWriting},
        {"prefetchw_then_copy", Prefetch::kBeforeCopy, PrefetchTo::kL1ForWriting},
        {"copy_then_prefetch_l2", Prefetch::kAfterCopy, PrefetchTo::kL2},
        {"prefetch_l2_then_copy", Prefetch::kBeforeCopy, PrefetchTo::kL2}};
    for (const FloorCopy& floor : floors) {
      benchmark::RegisterBenchmark(("BM_Floor/" + name + "/" + floor.name).c_str(),
                                   BM_CopySameBytes, &strategy, floor, false)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(("BM_FloorAndView/" + name).c_str(), BM_CopySameBytes, &strategy,
                                 FloorCopy{"", Prefetch::kBeforeCopy, PrefetchTo::kL2}, true)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

// The first benchmark of a process otherwise pays for the process's first use of this much
// memory (fresh pages from the kernel): run the setup of one iteration once, untimed.
void WarmUp() {
  const CacheStrategy* prealloc = FindCacheStrategy("prealloc");
  const Tensor prefill = Filled(kPrefill, 1.0f);
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<KvCache>> layers;
    for (int64_t l = 0; l < kLayers; ++l) {
      layers.push_back(*prealloc->create({.initial_capacity = 512}));
      (void)layers.back()->Append(prefill, prefill);
    }
  }
  EvictCaches();
}

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  kvcheck::bench::AddMachineContext();
  kvcheck::WarmUp();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
