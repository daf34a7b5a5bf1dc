#include "src/model/gemv.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>

#include "src/base/check.h"
#include "src/base/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/model/gemv.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After foreach_target.h: compiled once per target with this file.
#include "src/base/static_count-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::model {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Dot product of one row with x into y: lane-wise over k, then across lanes, then the tail,
// then the row's bias if there is one (`bias` null: none). Every row's sum is computed in this
// order, alone or beside others (GemvFarRows, and the batch form's six rows), so a row's bits
// do not depend on how the rows were grouped or split over threads; and the bias is added to
// the rounded sum, so they are those of the product followed by a separate bias add.
HWY_INLINE float RowTimesX(const float* row, const float* x, int64_t k_end, int64_t cols,
                           float lanes_sum, const float* bias, int64_t r) {
  for (int64_t t = k_end; t < cols; ++t) lanes_sum += row[t] * x[t];
  // Not `+ 0` without a bias: that would turn a -0 sum into +0.
  return bias != nullptr ? lanes_sum + bias[r] : lanes_sum;
}

void GemvOneRow(const float* w, const float* x, int64_t r, int64_t cols, const float* bias,
                float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const float* row = w + r * cols;
  auto acc = hn::Zero(d);
  int64_t k = 0;
  for (; k + N <= cols; k += N) acc = hn::MulAdd(hn::LoadU(d, row + k), hn::LoadU(d, x + k), acc);
  y[r] = RowTimesX(row, x, k, cols, hn::GetLane(hn::SumOfLanes(d, acc)), bias, r);
}

// Rows rows[0..kRows) (2, 4 or 8), sharing each load of x. Named accumulators (GCC kept an
// array of Highway vectors on the stack, and every multiply-add then waited on a store and a
// reload); the smaller forms never touch the accumulators past kRows.
template <int kRows>
void GemvFarRows(const float* w, const float* x, const int64_t* rows, int64_t cols,
                 const float* bias, float* y) {
  static_assert(kRows == 2 || kRows == 4 || kRows == 8, "two, four or eight streams");
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  // Rows past kRows alias row 0 and are never read.
  const auto row = [&](int i) { return w + rows[i < kRows ? i : 0] * cols; };
  const float *r0 = row(0), *r1 = row(1), *r2 = row(2), *r3 = row(3);
  const float *r4 = row(4), *r5 = row(5), *r6 = row(6), *r7 = row(7);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  int64_t k = 0;
  for (; k + N <= cols; k += N) {
    const auto xv = hn::LoadU(d, x + k);
    a0 = hn::MulAdd(hn::LoadU(d, r0 + k), xv, a0);
    a1 = hn::MulAdd(hn::LoadU(d, r1 + k), xv, a1);
    if constexpr (kRows >= 4) {
      a2 = hn::MulAdd(hn::LoadU(d, r2 + k), xv, a2);
      a3 = hn::MulAdd(hn::LoadU(d, r3 + k), xv, a3);
    }
    if constexpr (kRows == 8) {
      a4 = hn::MulAdd(hn::LoadU(d, r4 + k), xv, a4);
      a5 = hn::MulAdd(hn::LoadU(d, r5 + k), xv, a5);
      a6 = hn::MulAdd(hn::LoadU(d, r6 + k), xv, a6);
      a7 = hn::MulAdd(hn::LoadU(d, r7 + k), xv, a7);
    }
  }
  const auto finish = [&](int i, const float* r, hn::Vec<decltype(d)> a) {
    y[rows[i]] = RowTimesX(r, x, k, cols, hn::GetLane(hn::SumOfLanes(d, a)), bias, rows[i]);
  };
  finish(0, r0, a0);
  finish(1, r1, a1);
  if constexpr (kRows >= 4) finish(2, r2, a2), finish(3, r3, a3);
  if constexpr (kRows == 8) {
    finish(4, r4, a4), finish(5, r5, a5), finish(6, r6, a6), finish(7, r7, a7);
  }
}

// Rows at offsets [t_begin, t_end) of kStreams long streams: the rows from `first` are cut in
// kStreams streams of stream_rows rows, and one row of each is computed at a time, so the core
// reads that many far-apart regions front to back. A whole product on one thread walks every
// offset (GemvRowsImpl); a threaded product's region is walked a step of offsets at a time
// (GemvRegions).
// Stream j starts j rows into itself (offset t is its row (t + j) mod stream_rows, wrapping to
// its first rows at the end): the streams of a product are usually a multiple of 64 KiB apart
// (768 x 768 in four or eight parts: 576 or 288 KiB), so unstaggered streams would read lines
// of the same second-level cache sets at the same moment (a 512 KiB, 8-way cache repeats its
// sets every 64 KiB), and eight of them, each with lines prefetched ahead, outnumber a set's
// ways. Zen 2 VM, eight streams, the decode step's 768 x 768 products inside the 73 (one
// thread, 2026-12-04): staggered by 1, 3, 5 or 11 rows 18.1-18.9 GB/s, by none 15.7 (as four
// streams), by 21 rows (63 KiB, almost 64) 15.6.
// REQUIRES: stream_rows >= 1.
template <int kStreams>
void RegionStep(const float* w, const float* x, int64_t first, int64_t stream_rows,
                int64_t t_begin, int64_t t_end, int64_t cols, const float* bias, float* y) {
  // Row offsets within the streams, stepped and wrapped without a division: the 64-bit `%`
  // per stream and row that this replaced held 0.9% of a generated token's samples on a Zen 2
  // VM (perf, one thread, 2026-12-04; BM_DecodeStepGemv 0.99x the time after, six pairs).
  int64_t offset[kStreams];
  for (int j = 0; j < kStreams; ++j) {
    offset[j] = t_begin + j % stream_rows;
    if (offset[j] >= stream_rows) offset[j] -= stream_rows;
  }
  for (int64_t t = t_begin; t < t_end; ++t) {
    int64_t rows[kStreams];
    for (int j = 0; j < kStreams; ++j) {
      rows[j] = first + j * stream_rows + offset[j];
      offset[j] = offset[j] + 1 == stream_rows ? 0 : offset[j] + 1;
    }
    GemvFarRows<kStreams>(w, x, rows, cols, bias, y);
  }
}

// RegionStep for `streams` (2, 4 or 8) streams, then rows [tail_begin, tail_end) one at a
// time (the rows past the streams: after a whole product, or in a region's last step).
void GemvRegionStepImpl(const float* w, const float* x, int64_t first, int64_t stream_rows,
                        int64_t t_begin, int64_t t_end, int64_t tail_begin, int64_t tail_end,
                        int64_t cols, const float* bias, float* y, int streams) {
  if (t_begin < t_end) {
    if (streams == 8) {
      RegionStep<8>(w, x, first, stream_rows, t_begin, t_end, cols, bias, y);
    } else if (streams == 4) {
      RegionStep<4>(w, x, first, stream_rows, t_begin, t_end, cols, bias, y);
    } else {
      RegionStep<2>(w, x, first, stream_rows, t_begin, t_end, cols, bias, y);
    }
  }
  for (int64_t r = tail_begin; r < tail_end; ++r) GemvOneRow(w, x, r, cols, bias, y);
}

// Rows [begin, end) as `streams` (2, 4 or 8) long streams (RegionStep). The product is
// memory bound, and how it walks memory decides its speed. On a 50257 x 768 matrix, one core
// of the 2-core AMD EPYC Zen 3 VM read 12-15 GB/s with four adjacent rows at a time (the
// hardware prefetcher restarts a short stream every 3 KB row), 15-20 with eight adjacent
// rows, 17-23 with six far-apart rows, against 24-26 GB/s for a plain sum of the same bytes.
// On the Zen 4 VM, the decode step's 73 products (a throwaway program timing them beside
// passes over the same weights, one thread, 4 runs of 120 alternating rounds): two far-apart
// rows 24.9-25.3 GB/s, three 23.5-24.6, four 21.1-24.2, six 19.8-24.0 (the Highway six-row
// kernel this replaced 20.8-25.1), one row with one accumulator 21.0-22.4, a front-to-back
// sum of the same bytes 23.5-26.8. On a Zen 2 VM, whose one core read the weights 50% faster
// in eight streams than front to back, four far-apart rows took the generation benchmark's
// one-thread decode from 75-76% of its paired limit to 85-86% (two alternating pairs,
// 2026-12-04); eight measured the same as four until the streams were staggered (RegionStep),
// then faster. So `streams` is chosen per machine and thread count (GemvStreams in gemv.h).
void GemvRowsImpl(const float* w, const float* x, int64_t begin, int64_t end, int64_t cols,
                  const float* bias, float* y, int streams) {
  // Every offset of the streams at once, then the rows left over (fewer than `streams`).
  const int64_t stream_rows = (end - begin) / streams;
  GemvRegionStepImpl(w, x, begin, stream_rows, 0, stream_rows, begin + streams * stream_rows,
                     end, cols, bias, y, streams);
}

// The batch form (GemvBatch): m rows of x against the weights, which are read from memory
// once for all of them. Six far-apart weight rows (the one-row product reads two) meet a group of
// kGroup x rows at a time, 6 x kGroup accumulators in registers: each weight vector loaded serves
// the group's rows. More x rows than a group: each weight row's k range is taken in blocks of
// kBatchBlock floats, and the block (six rows of it, 12 KB) is read from memory for the first
// group and from the first-level cache for the others. Each (weight row, x row) pair keeps
// one accumulator vector across blocks (in `acc`, reloaded per block), so that every pair's
// lanes sum k in the order GemvFarRows and GemvOneRow use: a row's bits are Gemv's of that x
// row.
constexpr int64_t kBatchBlock = 512;
// x rows per group: 6 x kGroup accumulators, kGroup x vectors and one weight vector within
// the register file (32 vectors on AVX-512, 16 on AVX2 and SSE).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kGroup = 4;
#else
constexpr int kGroup = 2;
#endif
// `acc` holds kGemvMaxBatch x 6 vectors on the stack (12 KB with 16 lanes), and a block must
// be whole vectors: true of the x86 targets this project builds (at most 16 lanes); a wider
// target would need a heap buffer and blocks rounded to its vectors.
static_assert(hn::MaxLanes(hn::ScalableTag<float>()) <= 16 &&
                  kBatchBlock % hn::MaxLanes(hn::ScalableTag<float>()) == 0,
              "GemvBatch's stack accumulators and blocks assume at most 16 lanes");

// acc[j][i] (vectors, j < kRowsX, i < 6) += the lane-wise products of weight row i and x row
// j over k in [k0, k1) (whole vectors).
template <int kRowsX, class D>
HWY_INLINE void SixRowsGroupBlock(D d, const float* const* weight_rows, const float* x,
                                  int64_t cols, int64_t k0, int64_t k1, float* acc) {
  using V = hn::Vec<D>;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  V a[kRowsX][6];
  HWY_UNROLL(4)
  for (int j = 0; j < kRowsX; ++j) {
    HWY_UNROLL(6)
    for (int i = 0; i < 6; ++i) a[j][i] = hn::Load(d, acc + (j * 6 + i) * N);
  }
  for (int64_t k = k0; k < k1; k += N) {
    V xv[kRowsX];
    HWY_UNROLL(4)
    for (int j = 0; j < kRowsX; ++j) xv[j] = hn::LoadU(d, x + j * cols + k);
    HWY_UNROLL(6)
    for (int i = 0; i < 6; ++i) {
      const V wv = hn::LoadU(d, weight_rows[i] + k);
      HWY_UNROLL(4)
      for (int j = 0; j < kRowsX; ++j) a[j][i] = hn::MulAdd(wv, xv[j], a[j][i]);
    }
  }
  HWY_UNROLL(4)
  for (int j = 0; j < kRowsX; ++j) {
    HWY_UNROLL(6)
    for (int i = 0; i < 6; ++i) hn::Store(a[j][i], d, acc + (j * 6 + i) * N);
  }
}

// Rows first + i * stride, i = 0..5, against x rows [0, m): y[j * y_stride + row] for each.
void GemvSixRowsBatch(const float* w, const float* x, int64_t m, int64_t first, int64_t stride,
                      int64_t cols, const float* bias, int64_t y_stride, float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const float* weight_rows[6];
  for (int i = 0; i < 6; ++i) weight_rows[i] = w + (first + i * stride) * cols;
  HWY_ALIGN float acc[kGemvMaxBatch * 6 * hn::MaxLanes(d)];
  std::fill(acc, acc + m * 6 * N, 0.0f);
  const int64_t k_end = cols / N * N;
  for (int64_t block = 0; block < k_end; block += kBatchBlock) {
    const int64_t block_end = std::min(k_end, block + kBatchBlock);
    for (int64_t j = 0; j < m; j += kGroup) {
      const float* xj = x + j * cols;
      float* aj = acc + j * 6 * N;
      auto group = [&](auto rows_x) HWY_ATTR {
        SixRowsGroupBlock<decltype(rows_x)::value>(d, weight_rows, xj, cols, block, block_end, aj);
      };
      const int group_rows = static_cast<int>(std::min<int64_t>(kGroup, m - j));
      kvcheck::HWY_NAMESPACE::WithStaticCount<kGroup>(group_rows, group);
    }
  }
  for (int64_t j = 0; j < m; ++j) {
    for (int i = 0; i < 6; ++i) {
      const auto a = hn::Load(d, acc + (j * 6 + i) * N);
      y[j * y_stride + first + i * stride] =
          RowTimesX(weight_rows[i], x + j * cols, k_end, cols, hn::GetLane(hn::SumOfLanes(d, a)),
                    bias, first + i * stride);
    }
  }
}

// The batch size up to which GemvBatch beats OpenBLAS sgemm on this target (GemvBatchLimit).
// The 124M model's 73 products, one thread, Zen 4 VM, against OpenBLAS's AVX-512 kernels
// (bench/gemv_benchmark BM_ChunkStep): on AVX-512, 32 rows 120 against 149 ms (64: 220
// against 225); on the AVX2 target, 16 rows 92.1 against 104, 24 rows 139 against 120.
// Measured for those two only: the 16 of the groups of two serves SSE and the emulated
// targets too, unmeasured.
int64_t BatchLimitImpl() { return kGroup == 4 ? kGemvMaxBatch : 16; }

// Rows [begin, end) against x rows [0, m), as GemvRowsImpl walks them.
void GemvBatchRowsImpl(const float* w, const float* x, int64_t m, int64_t begin, int64_t end,
                       int64_t cols, const float* bias, int64_t y_stride, float* y) {
  const int64_t part = (end - begin) / 6;
  for (int64_t i = 0; i < part; ++i) {
    GemvSixRowsBatch(w, x, m, begin + i, part, cols, bias, y_stride, y);
  }
  for (int64_t r = begin + 6 * part; r < end; ++r) {
    for (int64_t j = 0; j < m; ++j) GemvOneRow(w, x + j * cols, r, cols, bias, y + j * y_stride);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::model
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvcheck::model {

HWY_EXPORT(GemvRowsImpl);
HWY_EXPORT(GemvRegionStepImpl);
HWY_EXPORT(GemvBatchRowsImpl);
HWY_EXPORT(BatchLimitImpl);

namespace {

// How many of num_threads threads a product of `rows` rows runs on: at least 64 rows each
// (fewer would cost a thread's hand-off more than its rows), at least one thread.
int64_t ThreadsFor(int64_t rows, int num_threads) {
  return std::min<int64_t>(num_threads, std::max<int64_t>(1, rows / 64));
}

// Runs run_rows(begin, end) over [0, rows), on up to num_threads threads: the batch form's
// split (the one-row form's is GemvRegions). Several threads claim chunks of chunk_rows rows
// in turn, not one static range each: the threads' shares of the
// memory system differ from moment to moment, and with static halves each of a decode step's
// 73 products ended when the slower thread did. The step's products on the 2-core Intel Xeon
// (AVX-512) VM, two threads, two streams per chunk, alternating runs (bench/gemv_benchmark):
// static halves 25.5-29.6 ms, chunks of 48 rows 17.6-21.0 ms (12 rows: 20.0-22.7, 24:
// 18.6-22.3, 72: 19.6-23.9); one thread is the same either way (31.9-33.6 ms), so it keeps
// the whole range.
template <typename RunRows>
void SplitRows(int64_t rows, int num_threads, int64_t chunk_rows, const RunRows& run_rows) {
  const int64_t parts = ThreadsFor(rows, num_threads);
  if (parts <= 1) {
    run_rows(0, rows);
    return;
  }
  const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  SharedThreadPool(static_cast<int>(parts)).ParallelFor(chunks, [&](int64_t chunk) {
    const int64_t begin = chunk * chunk_rows;
    run_rows(begin, std::min(rows, begin + chunk_rows));
  });
}

// Rows per stream in a step of a threaded product's region (GemvRegions): the unit a thread
// claims, from its own region or, once that is done, from another's. The Xeon's best chunks
// of the interleaved split this replaced were two streams of 24 rows.
constexpr int64_t kRowsPerStream = 24;
// A region's last kEndRows offsets go in steps of kEndRowsPerStream: the thread that finishes
// first then waits for at most a small step of the other's, not a 24-row one (two streams of
// 24 rows of 768 floats: 144 KiB, about 5 us at the 30 GB/s a core reads).
constexpr int64_t kEndRows = 48, kEndRowsPerStream = 6;

// A product on `parts` threads (2 <= parts <= rows / 64). Each thread owns a region, one
// contiguous part of the rows, cut in `streams` streams (GemvRegionStepImpl), and claims
// its steps front to back, so its streams run unbroken the length of its region as one
// thread's do over the whole product (GemvRowsImpl); a thread whose region is done takes the
// next steps of the others' (the threads' shares of the memory system differ from moment to
// moment, and a static split would end each of a decode step's products when the slower
// thread did).
// Why regions: the split this replaced let the threads claim 24-row-per-stream chunks of
// the whole product in turn, so every thread's streams broke off every chunk (144 KiB with
// two streams of 768-float rows) and the hardware prefetcher started them again. On the Zen 4
// VM (2026-12-05, bench/generation_benchmark, two threads, `prealloc` and `scattered`, three
// alternating pairs of runs) two-thread generation read 77-93% of its paired limit that way
// (median 81%) and 84-94% with regions (median 88.5%), more in all six comparisons; the
// race before it had four strategies of five at 75-76% (one thread 93-96%).
void GemvRegions(const float* w, const float* x, int64_t rows, int64_t cols, const float* bias,
                 float* y, int64_t parts, int streams) {
  struct alignas(64) Region {  // one cache line each: the owner's claims stay local
    int64_t first = 0, end = 0, stream_rows = 0;
    // Steps [0, long_steps) are kRowsPerStream offsets each; the rest kEndRowsPerStream.
    int64_t long_steps = 0, steps = 0;
    std::atomic<int64_t> next_step{0};
    int64_t StepBegin(int64_t step) const {
      return step < long_steps ? step * kRowsPerStream
                               : long_steps * kRowsPerStream +
                                     (step - long_steps) * kEndRowsPerStream;
    }
  };
  std::unique_ptr<Region[]> regions(new Region[parts]);
  for (int64_t i = 0; i < parts; ++i) {
    Region& region = regions[i];
    region.first = rows * i / parts;
    region.end = rows * (i + 1) / parts;
    region.stream_rows = (region.end - region.first) / streams;  // >= 8: a region has >= 64 rows
    region.long_steps = std::max<int64_t>(0, region.stream_rows - kEndRows) / kRowsPerStream;
    const int64_t end_rows = region.stream_rows - region.long_steps * kRowsPerStream;
    region.steps = region.long_steps + (end_rows + kEndRowsPerStream - 1) / kEndRowsPerStream;
  }
  SharedThreadPool(static_cast<int>(parts)).ParallelFor(parts, [&](int64_t own) {
    for (int64_t k = 0; k < parts; ++k) {
      Region& region = regions[(own + k) % parts];
      for (int64_t step = region.next_step.fetch_add(1, std::memory_order_relaxed);
           step < region.steps; step = region.next_step.fetch_add(1, std::memory_order_relaxed)) {
        const int64_t t_begin = region.StepBegin(step);
        const bool last = step == region.steps - 1;
        const int64_t t_end = last ? region.stream_rows : region.StepBegin(step + 1);
        HWY_DYNAMIC_DISPATCH(GemvRegionStepImpl)(
            w, x, region.first, region.stream_rows, t_begin, t_end,
            last ? region.first + streams * region.stream_rows : 0, last ? region.end : 0, cols,
            bias, y, streams);
      }
    }
  });
}

// The batch form's chunks: six streams (GemvBatchRowsImpl) of 8 rows.
constexpr int64_t kBatchChunkRows = 48;

}  // namespace

namespace {

// The stream counts GemvRowsImpl and GemvRegions take, which TimeStreams times.
constexpr int kStreamCounts[] = {2, 4, 8};
constexpr int kStreamCountsSize = static_cast<int>(std::size(kStreamCounts));

// GemvStreams' choice for products on t threads, chosen_streams[t]: 0 before it is made, -1
// while one thread times them, else one of kStreamCounts. One per thread count: the best
// count on one core is not the best on two. On the Zen 4 VM (2026-12-05, a throwaway program
// timing the decode step's 49 products beside a two-thread pass over the same arena, 20-40
// alternating rounds, eleven runs): two threads read as fast as the pass with 2, 4 or 8
// streams each while the VM's memory ran at 33-37 GB/s, but at 58-63 GB/s, its fast state,
// 98-100% of the pass with 2 streams each, 95-97% with 4 and 86-87% with 8 (16 streams in
// flight across the two cores); one thread, at 31-33 GB/s, 99-102% with 2, 97-99% with 4,
// 85-89% with 8.
std::atomic<int> chosen_streams[kMaxSharedPoolThreads + 1];
// A product this large reads its weights from memory (more than any last-level cache of the
// machines measured), as a decode step's do.
constexpr int64_t kCalibrationBytes = int64_t{64} << 20;
// More streams must be this much faster to be chosen over fewer (the fewer, the fewer
// concurrent streams the memory system juggles when other cores read too).
constexpr double kMoreStreamsMargin = 0.03;

void RunProduct(const float* w, const float* x, int64_t rows, int64_t cols, const float* bias,
                float* y, int64_t parts, int streams) {
  if (parts <= 1) {
    HWY_DYNAMIC_DISPATCH(GemvRowsImpl)(w, x, 0, rows, cols, bias, y, streams);
  } else {
    GemvRegions(w, x, rows, cols, bias, y, parts, streams);
  }
}

// Times each stream count on this product, on `parts` threads, in seven rounds of
// alternating order, and returns the fewest streams whose time relative to the fewest's in
// the same round has a median within kMoreStreamsMargin of the best such median. Ratios
// within a round, because a VM's bandwidth jumps by tens of percent from second to second;
// the median, because one round can still straddle a jump. (On the Zen 4 VM the best of
// three rounds chose 4 streams on some starts where 2 read 1-3% faster over many rounds, and
// 5-14% faster on two threads in the VM's fast state.) Writes y (the same bits every time).
int TimeStreams(const float* w, const float* x, int64_t rows, int64_t cols, const float* bias,
                float* y, int64_t parts) {
  constexpr int kRounds = 7;
  double relative[kStreamCountsSize][kRounds];
  for (int round = 0; round < kRounds; ++round) {
    double seconds[kStreamCountsSize];
    for (int i = 0; i < kStreamCountsSize; ++i) {
      const int which = (round % 2 == 0) ? i : kStreamCountsSize - 1 - i;
      const auto start = std::chrono::steady_clock::now();
      RunProduct(w, x, rows, cols, bias, y, parts, kStreamCounts[which]);
      seconds[which] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    for (int i = 0; i < kStreamCountsSize; ++i) relative[i][round] = seconds[i] / seconds[0];
  }
  double median[kStreamCountsSize];
  for (int i = 0; i < kStreamCountsSize; ++i) {
    std::sort(relative[i], relative[i] + kRounds);
    median[i] = relative[i][kRounds / 2];
  }
  const double fastest = *std::min_element(median, median + kStreamCountsSize);
  int i = 0;
  while (median[i] > fastest * (1 + kMoreStreamsMargin)) ++i;
  return kStreamCounts[i];
}

// The stream count for this call on `parts` threads: the choice for that many, once made;
// else 2, except that the first call of at least kCalibrationBytes makes it.
int StreamsFor(const float* w, const float* x, int64_t rows, int64_t cols, const float* bias,
               float* y, int64_t parts) {
  std::atomic<int>& chosen = chosen_streams[parts];
  int state = chosen.load(std::memory_order_relaxed);
  if (state > 0) return state;
  if (state < 0 || rows * cols * static_cast<int64_t>(sizeof(float)) < kCalibrationBytes) {
    return 2;
  }
  if (!chosen.compare_exchange_strong(state, -1, std::memory_order_relaxed)) {
    return state > 0 ? state : 2;
  }
  const int streams = TimeStreams(w, x, rows, cols, bias, y, parts);
  chosen.store(streams, std::memory_order_relaxed);
  return streams;
}

}  // namespace

int GemvStreams(int num_threads) {
  KV_CHECK(num_threads >= 1 && num_threads <= kMaxSharedPoolThreads);
  const int state = chosen_streams[num_threads].load(std::memory_order_relaxed);
  return state > 0 ? state : 0;
}

void GemvWithStreams(const float* w, const float* x, int64_t rows, int64_t cols, float* y,
                     int num_threads, int streams, const float* bias) {
  KV_CHECK(std::find(std::begin(kStreamCounts), std::end(kStreamCounts), streams) !=
           std::end(kStreamCounts));
  KV_CHECK(num_threads >= 1 && num_threads <= kMaxSharedPoolThreads);
  RunProduct(w, x, rows, cols, bias, y, ThreadsFor(rows, num_threads), streams);
}

void Gemv(const float* w, const float* x, int64_t rows, int64_t cols, float* y, int num_threads,
          const float* bias) {
  KV_CHECK(num_threads >= 1 && num_threads <= kMaxSharedPoolThreads);
  const int64_t parts = ThreadsFor(rows, num_threads);
  RunProduct(w, x, rows, cols, bias, y, parts, StreamsFor(w, x, rows, cols, bias, y, parts));
}

int64_t GemvBatchLimit() { return HWY_DYNAMIC_DISPATCH(BatchLimitImpl)(); }

void GemvBatch(const float* w, const float* x, int64_t m, int64_t rows, int64_t cols, float* y,
               int num_threads, const float* bias) {
  KV_CHECK(m >= 1 && m <= kGemvMaxBatch);  // the accumulators are a stack array of that size
  if (m == 1) {
    Gemv(w, x, rows, cols, y, num_threads, bias);
    return;
  }
  SplitRows(rows, num_threads, kBatchChunkRows, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(GemvBatchRowsImpl)(w, x, m, begin, end, cols, bias, rows, y);
  });
}

void AdviseHugePages(const float* data, int64_t count) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data + count) & ~(kHuge - 1);
  if (end <= begin) return;
  void* const start = reinterpret_cast<void*>(begin);
  // Already-touched pages are only collapsed by khugepaged, minutes later; MADV_COLLAPSE
  // (25, absent from older headers) does it now. Errors are ignored: this is advice.
  if (madvise(start, end - begin, MADV_HUGEPAGE) != 0) return;
  constexpr int kMadvCollapse = 25;
  (void)madvise(start, end - begin, kMadvCollapse);
}

void GemvScalar(const float* w, const float* x, int64_t rows, int64_t cols, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (int64_t k = 0; k < cols; ++k) sum += w[r * cols + k] * x[k];
    y[r] = sum;
  }
}

}  // namespace kvcheck::model
#endif  // HWY_ONCE
