// thread_pool_benchmark: what one ParallelFor costs beyond its items. A decode step issues
// one loop per matrix-vector product and per attention call, about 85 per token of the 124M
// model, each a few dozen microseconds of work on two threads, so the start and the wait for
// the last worker are paid at every one of them.
//
// BM_EmptyLoop/threads:T: a loop of T items that do nothing (the round trip alone);
// BM_EmptyLoopSharedPool/threads:T the same with the pool looked up per loop.
// BM_ShortLoop/threads:T: a loop of 2T items of about 2 us of arithmetic each.
//
//   bazel run --config=opt //bench:thread_pool_benchmark
#include <cstdint>

#include "benchmark/benchmark.h"
#include "bench/machine_context.h"
#include "src/base/thread_pool.h"

namespace kvcheck {
namespace {

void BM_EmptyLoop(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ThreadPool& pool = SharedThreadPool(threads);
  for (auto _ : state) pool.ParallelFor(threads, [](int64_t) {});
}
BENCHMARK(BM_EmptyLoop)->Arg(2)->ArgName("threads")->UseRealTime();

// The same, looking the pool up per loop as the kernels do (SharedThreadPool).
void BM_EmptyLoopSharedPool(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) SharedThreadPool(threads).ParallelFor(threads, [](int64_t) {});
}
BENCHMARK(BM_EmptyLoopSharedPool)->Arg(2)->ArgName("threads")->UseRealTime();

// About 2 us on a 3 GHz core: a chain of dependent multiply-adds the compiler cannot fold.
double ShortWork(int64_t item) {
  double x = 1.0 + static_cast<double>(item) * 1e-9;
  for (int i = 0; i < 1500; ++i) x = x * 0.999999 + 1e-7;
  return x;
}

void BM_ShortLoop(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ThreadPool& pool = SharedThreadPool(threads);
  double sink[64] = {};
  for (auto _ : state) {
    pool.ParallelFor(2 * threads, [&](int64_t item) { sink[item * 8 % 64] = ShortWork(item); });
    benchmark::DoNotOptimize(sink);
  }
}
BENCHMARK(BM_ShortLoop)->Arg(2)->ArgName("threads")->UseRealTime();

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) { return kvcheck::bench::RunWithMachineContext(argc, argv); }
