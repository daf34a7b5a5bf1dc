// gemv_benchmark: the matrix-vector products of one GPT-2 124M decode step (what a generated
// token costs: ~94% of its time, docs/performance.md), against the read bandwidth of the same
// binary at the same thread count. Every product reads its weights once, so the step is
// memory bound and its floor is bytes / bandwidth.
//
// BM_DecodeStepGemv/threads:T: the step's 49 products in the decoder's order (per layer
// q, k and v as one 2304 x 768 product, as the decoder runs them since fb70693 (73 products
// before, the three apart); o 768 x 768; up 3072 x 768; down 768 x 3072; then the 50257 x 768
// head), 495 MB of weights on transparent huge pages as the decoder's are; reported as GB/s of
// weights and as a share of ReadBandwidth(T) (bench/read_bandwidth.h), measured around the runs.
// BM_OneGemv/rows/cols/threads: one product alone, repeated (the small ones stay in L2/L3).
// BM_ChunkStep/path/m/threads: the same 49 products for a prefill chunk of m tokens, side by
// side: path 0 model::Linear as the decoder runs it (GemvBatch up to GemvBatchLimit() rows;
// beyond, single-threaded OpenBLAS sgemm on slices of 128 outputs that the threads claim),
// path 1 OpenBLAS sgemm on OpenBLAS's own threads. After a threaded sgemm OpenBLAS's workers
// spin in sched_yield for 0.1-0.2 s, which this loop of back-to-back calls does not show.
//
//   bazel run --config=opt //bench:gemv_benchmark
#include <algorithm>
#include <cstdint>
#include <vector>

#include <cblas.h>

#include "benchmark/benchmark.h"
#include "bench/machine_context.h"
#include "bench/read_bandwidth.h"
#include "src/model/gemv.h"
#include "src/model/layer_ops.h"

namespace kvcheck {
namespace {

struct Product {
  int64_t rows, cols;
  std::vector<float> w;
};

constexpr int64_t kWidth = 768, kHidden = 3072, kVocab = 50257, kLayers = 12;

std::vector<Product>& DecodeStep() {
  static std::vector<Product>* step = [] {
    auto* products = new std::vector<Product>;
    auto add = [&](int64_t rows, int64_t cols) {
      Product p{rows, cols, std::vector<float>(rows * cols)};
      model::AdviseHugePages(p.w.data(), rows * cols);  // before the first touch
      for (int64_t i = 0; i < rows * cols; ++i) p.w[i] = static_cast<float>(i % 97) * 1e-3f;
      model::AdviseHugePages(p.w.data(), rows * cols);
      products->push_back(std::move(p));
    };
    for (int64_t l = 0; l < kLayers; ++l) {
      add(3 * kWidth, kWidth);  // q, k and v: one product, as the decoder runs them
      add(kWidth, kWidth);
      add(kHidden, kWidth);
      add(kWidth, kHidden);
    }
    add(kVocab, kWidth);
    return products;
  }();
  return *step;
}

void BM_DecodeStepGemv(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<Product>& step = DecodeStep();
  std::vector<float> x(kHidden, 0.5f), y(kVocab);
  int64_t bytes = 0;
  for (const Product& p : step) bytes += p.rows * p.cols * 4;
  double floor = bench::ReadBandwidth(threads);
  for (auto _ : state) {
    for (const Product& p : step) {
      model::Gemv(p.w.data(), x.data(), p.rows, p.cols, y.data(), threads);
      benchmark::DoNotOptimize(y.data());
    }
  }
  floor = std::max(floor, bench::ReadBandwidth(threads));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations(),
                                              benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
  state.counters["floor_GB/s"] = floor / 1e9;
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["streams"] = model::GemvStreams(threads);  // as the first step's head chose
}
BENCHMARK(BM_DecodeStepGemv)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

void BM_ChunkStep(benchmark::State& state) {
  const bool blas = state.range(0) == 1;
  const int64_t m = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  std::vector<Product>& step = DecodeStep();
  std::vector<float> x(m * kHidden, 0.5f), y(m * kVocab);
  int64_t bytes = 0;
  for (const Product& p : step) bytes += p.rows * p.cols * 4;
  openblas_set_num_threads(threads);
  for (auto _ : state) {
    for (const Product& p : step) {
      if (blas) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m),
                    static_cast<int>(p.rows), static_cast<int>(p.cols), 1.0f, x.data(),
                    static_cast<int>(p.cols), p.w.data(), static_cast<int>(p.cols), 0.0f,
                    y.data(), static_cast<int>(p.rows));
      } else {
        model::Linear(x.data(), m, p.cols, p.w.data(), nullptr, p.rows, y.data(),
                      model::MatmulPath::kOptimized, threads);
      }
      benchmark::DoNotOptimize(y.data());
    }
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations(),
                                              benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
  state.counters["GFLOP/s"] = benchmark::Counter(
      static_cast<double>(bytes / 4 * 2 * m) * state.iterations(), benchmark::Counter::kIsRate,
      benchmark::Counter::kIs1000);
  state.SetLabel(blas ? "sgemm, OpenBLAS threads" : "Linear");
}
BENCHMARK(BM_ChunkStep)
    ->ArgsProduct({{0, 1}, {1, 4, 8, 16, 24, 32, 33, 128}, {1, 2}})
    ->ArgNames({"path", "m", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);

void BM_OneGemv(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  std::vector<float> w(rows * cols, 0.25f), x(cols, 0.5f), y(rows);
  model::AdviseHugePages(w.data(), rows * cols);
  for (auto _ : state) {
    model::Gemv(w.data(), x.data(), rows, cols, y.data(), threads);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(rows * cols * 4) *
                                                  state.iterations(),
                                              benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_OneGemv)
    ->ArgsProduct({{kWidth}, {kWidth}, {1, 2}})
    ->ArgsProduct({{kHidden}, {kWidth}, {1, 2}})
    ->ArgsProduct({{kWidth}, {kHidden}, {1, 2}})
    ->ArgsProduct({{kVocab}, {kWidth}, {1, 2}})
    ->ArgNames({"rows", "cols", "threads"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace kvcheck

int main(int argc, char** argv) { return kvcheck::bench::RunWithMachineContext(argc, argv); }
