// The append experiment (bench/append_steps.h) with every way of appending measured in the
// same steps: per strategy, a set of 30 prefilled caches for each way (one appended to through
// AppendInto, one through Append, one written by each floor copy of kFloorCopies), and in each
// of the 200 decode steps, each set's step (all 30 layers) in an order shuffled anew per step,
// each timed alone. The ratios to the floor (its fastest copy) are of time summed over the same
// steps, so what moves this VM's timings from minute to minute (the other guest's memory
// traffic, frequency) moves both sides of a ratio alike; in separate runs
// (cache_append_benchmark.cc) a strategy's ratio moved by about 0.2 from run to run, more than
// any change to the append path. Shuffling keeps a fixed order from favouring one side (the
// step before another leaves its last prefetches in flight). The ways rotate over the sets
// between iterations (BM_PairedSteps), so each writes the same buffers in the end.
//
//   bazel run --config=opt //bench:cache_append_paired_benchmark -- --benchmark_repetitions=5
//
// Counters, in microseconds per decode step (30 layers): `into`, `append`, each floor copy's,
// `floor` (the fastest of them); `into/floor` and `append/floor` their ratios; and
// `cached_floor`, the fastest copy through the caches (the plain and the prefetching ones,
// the floor an append is held to), with `into/cached_floor`. The non-temporal copy is kept out of
// that one because a cache cannot write its rows that way for free: they would leave the
// caches, and the attention that follows each append reads them back.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/append_steps.h"
#include "benchmark/benchmark.h"

namespace kvcheck {
namespace {

using bench::kAppendSteps;
using bench::kFloorCopies;

constexpr int kFloors = static_cast<int>(std::size(kFloorCopies));
// Way 0 appends through AppendInto, 1 through Append, 2 + i copies as kFloorCopies[i].
constexpr int kInto = 0, kAppend = 1, kMethods = 2 + kFloors;

void BM_PairedSteps(benchmark::State& state, const CacheStrategy* strategy) {
  const Tensor step_k = bench::AppendInput(1, 3.0f), step_v = bench::AppendInput(1, 4.0f);
  std::array<double, kMethods> seconds{};
  std::array<int, kMethods> order;
  for (int m = 0; m < kMethods; ++m) order[m] = m;
  std::mt19937_64 shuffle(state.range(0));  // the same orders in every run
  int rotation = 0;
  for (auto _ : state) {
    std::array<std::vector<CacheView>, kMethods> views;
    std::array<std::vector<std::unique_ptr<KvCache>>, kMethods> layers;
    for (int m = 0; m < kMethods; ++m) layers[m] = bench::PrefilledLayers(*strategy, &views[m]);
    bench::EvictCaches();
    // Way m appends to set (m + rotation) % kMethods, the rotation advancing per iteration, so
    // that every way writes every set in turn. The allocator hands each iteration's sets the
    // memory the last one freed, so a set keeps its physical pages, and with them which lines
    // of the caches its rows compete for, through a run (buffers under 2 MiB are on 4 KiB
    // pages); with a fixed assignment, one way's placement against another's moved the
    // ratios by up to 0.4 between runs (interleaved 1.30-1.73, 2026-12-03), within a run
    // by a few percent.
    std::array<double, kMethods> iteration{};
    for (int64_t step = 0; step < kAppendSteps; ++step) {
      const int64_t position = bench::kAppendPrefill + step;
      std::shuffle(order.begin(), order.end(), shuffle);
      for (const int m : order) {
        const int set = (m + rotation) % kMethods;
        const auto start = std::chrono::steady_clock::now();
        if (m == kInto || m == kAppend) {
          bench::AppendStep(layers[set], views[set], step_k, step_v, /*kept_views=*/m == kInto);
        } else {
          bench::FloorStep(views[set], position, step_k, step_v, kFloorCopies[m - 2],
                           [](const CacheView&) {});
        }
        benchmark::ClobberMemory();
        const auto end = std::chrono::steady_clock::now();
        iteration[m] += std::chrono::duration<double>(end - start).count();
      }
    }
    for (int m = 0; m < kMethods; ++m) seconds[m] += iteration[m];
    rotation = (rotation + 1) % kMethods;
    state.SetIterationTime(iteration[kInto]);
  }
  const double steps = static_cast<double>(kAppendSteps) * state.iterations();
  auto micros = [&](int m) { return seconds[m] / steps * 1e6; };
  double floor = std::numeric_limits<double>::infinity(), cached_floor = floor;
  for (int i = 0; i < kFloors; ++i) {
    state.counters[kFloorCopies[i].name] = micros(2 + i);
    floor = std::min(floor, micros(2 + i));
    if (kFloorCopies[i].store == bench::Store::kCached) {
      cached_floor = std::min(cached_floor, micros(2 + i));
    }
  }
  state.counters["into"] = micros(kInto);
  state.counters["append"] = micros(kAppend);
  state.counters["floor"] = floor;
  state.counters["into/floor"] = micros(kInto) / floor;
  state.counters["append/floor"] = micros(kAppend) / floor;
  state.counters["cached_floor"] = cached_floor;
  state.counters["into/cached_floor"] = micros(kInto) / cached_floor;
}

const bool registered = [] {
  for (const CacheStrategy& strategy : CacheStrategies()) {
    if (!bench::WritesInPlace(strategy)) continue;
    benchmark::RegisterBenchmark(("BM_PairedSteps/" + std::string(strategy.name)).c_str(),
                                 BM_PairedSteps, &strategy)
        ->Arg(1)  // the shuffle's seed
        ->ArgName("seed")
        ->Iterations(4 * kMethods)  // each way on each set four times
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) { return kvcheck::bench::RunAppendBenchmarks(argc, argv); }
