// candle 0.11's KV-cache append experiment: a SmolLM2-like stack of 30 layers, 3 KV heads, head
// dim 64, f32; prefill 128 positions, then 200 decode steps of one token into every layer.
// Reports the time per decode step (all 30 layers) for each registered strategy, appending
// with Append (a new view per append: BM_AppendDecode) and with AppendInto (each layer's view
// kept and updated: BM_AppendIntoDecode), next to its floor (the fastest of a plain, four
// prefetching and a non-temporal copy of the same bytes into the same slots of the same
// strategy's buffers: bench/append_steps.h),
// and the bytes each step writes. BM_FloorAndView adds to the floor's copy what every
// append's returned view costs (copying and dropping two tensors with reference-counted
// storage), to show how much of the gap to the floor that is.
//
//   bazel run --config=opt //bench:cache_append_benchmark
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/append_steps.h"
#include "benchmark/benchmark.h"

namespace kvcheck {
namespace {

using bench::AppendInput;
using bench::EvictCaches;
using bench::FloorCopy;
using bench::kAppendBytesPerStep;
using bench::kAppendSteps;
using bench::kFloorCopies;
using bench::Prefetch;
using bench::PrefetchTo;
using bench::PrefilledLayers;

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
      benchmark::Counter(static_cast<double>(kAppendSteps) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_step"] = static_cast<double>(kAppendBytesPerStep);
  state.SetBytesProcessed(kAppendBytesPerStep * kAppendSteps * state.iterations());
}

// The decode steps, two ways: `kept_views` false, each append returns a new view that the
// caller drops (Append); true, each layer's view (the prefill's at first) is kept across the
// steps and every append writes into it (AppendInto), as a decode loop that keeps one view
// per layer does.
void BM_AppendDecode(benchmark::State& state, const CacheStrategy* strategy, bool kept_views) {
  const Tensor step_k = AppendInput(1, 3.0f), step_v = AppendInput(1, 4.0f);
  for (auto _ : state) {
    std::vector<CacheView> views;
    std::vector<std::unique_ptr<KvCache>> layers = PrefilledLayers(*strategy, &views);
    if (!kept_views) views.clear();  // no view across steps
    EvictCaches();
    TimeSteps(state, [&] {
      for (int64_t step = 0; step < kAppendSteps; ++step) {
        bench::AppendStep(layers, views, step_k, step_v, kept_views);
      }
    });
  }
  ReportPerStep(state);
}

// A strategy's floor (bench/append_steps.h): the same bytes copied row by row (one 256-byte
// row per head) into the same slots of the same buffers, with no bookkeeping: the buffers of
// that strategy's freshly prefilled caches (prealloc's (1, KH, capacity, D) buffers, ring's
// and scattered's 4096-slot ones, interleaved's (1, capacity, KH, 2D) one), so both write into
// memory of the same layout in the same state. Position p lives in slot p in all four until a
// ring wraps (it does not here). One benchmark per floor copy (kFloorCopies); the caches
// prefetch first, into the second level (SlotBuffers::PrefetchSlot).
//
// Not a floor, but where the rest goes: with `with_view`, the copy that prefetches first also
// copies and drops the layer's two view tensors, as each append returns a view the caller then
// drops; their storage is reference counted, so that is two locked increments and two locked
// decrements.
void BM_CopySameBytes(benchmark::State& state, const CacheStrategy* strategy, FloorCopy floor,
                      bool with_view) {
  const Tensor step_k = AppendInput(1, 3.0f), step_v = AppendInput(1, 4.0f);
  for (auto _ : state) {
    std::vector<CacheView> views;
    std::vector<std::unique_ptr<KvCache>> layers = PrefilledLayers(*strategy, &views);
    EvictCaches();
    TimeSteps(state, [&] {
      for (int64_t step = 0; step < kAppendSteps; ++step) {
        const int64_t position = bench::kAppendPrefill + step;
        bench::FloorStep(views, position, step_k, step_v, floor, [&](const CacheView& view) {
          if (!with_view) return;
          Tensor k = view.k, v = view.v;
          benchmark::DoNotOptimize(k);
          benchmark::DoNotOptimize(v);
        });
        benchmark::ClobberMemory();
      }
    });
  }
  ReportPerStep(state);
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
    if (!bench::WritesInPlace(strategy)) continue;
    for (const FloorCopy& floor : kFloorCopies) {
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

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) { return kvcheck::bench::RunAppendBenchmarks(argc, argv); }
