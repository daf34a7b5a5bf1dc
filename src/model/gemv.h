// File: gemv.h
// Matrix-vector product for decode steps: y[n] = sum_k w[n * cols + k] x[k], w row-major
// [rows, cols]. Memory bound: every weight is read once per call, so the kernel reads two,
// four or eight far-apart rows at a time (GemvStreams), each a long front-to-back stream,
// with FMA accumulators (Highway, dynamic dispatch), and splits the rows over threads.
// GemvScalar is the plain path beside it.
//
// Why not OpenBLAS sgemv: Debian's OpenBLAS 0.3.21 does not recognise every current CPU; on
// one development VM it fell back to its SSE3 ("PRESCOTT") kernels, 14 tokens/s for the 124M
// model on one thread (bench/generation_benchmark.cc), and how a memory-bound product walks
// memory is worth owning (see GemvRowsImpl).
#ifndef KVCHECK_SRC_MODEL_GEMV_H_
#define KVCHECK_SRC_MODEL_GEMV_H_

#include <cstdint>

namespace kvcheck::model {

// With `bias` (rows floats), y[n] = that sum + bias[n]: the bits of the product followed by a
// separate add, each thread adding its own rows' (a separate pass after a threaded product
// read half of y from the other core's cache).
// REQUIRES: 1 <= num_threads <= kMaxSharedPoolThreads (256, src/base/thread_pool.h; checked).
void Gemv(const float* w, const float* x, int64_t rows, int64_t cols, float* y, int num_threads,
          const float* bias = nullptr);
// How many far-apart rows each thread of a Gemv on num_threads threads reads at a time, each
// a front-to-back stream: 2, 4 or 8, or 0 while not yet chosen for that many threads. Which
// is fastest depends on the machine and on how many cores read at once (on a Zen 2 VM four
// gave one thread 15-23% more tokens per second than two, and eight took the step's products
// 0.90x the time of four; on a Zen 4 VM two read the weights as fast or faster, and on two
// threads in the VM's fast memory state 3-5% faster than four and 14% faster than eight,
// gemv.cc), so the process's first product of at least 64 MiB of weights on a given number
// of threads times each there (seven rounds, about twenty extra products, once per thread
// count) and keeps the fewest streams within 3% of the fastest; until then Gemv reads two.
// Every row's bits are the same whichever.
// REQUIRES: 1 <= num_threads <= kMaxSharedPoolThreads (256, src/base/thread_pool.h; checked).
int GemvStreams(int num_threads);
// Gemv with a given number of streams (2, 4 or 8, checked), for tests and benchmarks.
void GemvWithStreams(const float* w, const float* x, int64_t rows, int64_t cols, float* y,
                     int num_threads, int streams, const float* bias = nullptr);
void GemvScalar(const float* w, const float* x, int64_t rows, int64_t cols, float* y);

// The most rows of x GemvBatch takes in one call.
inline constexpr int64_t kGemvMaxBatch = 32;

// The product for m rows of x at once (x row-major [m, cols], y row-major [m, rows]), for
// short prefill chunks: the weights are read from memory once for all m rows, on this
// module's threads, and row j of y is bitwise Gemv's of row j of x.
// REQUIRES: 1 <= m <= kGemvMaxBatch, 1 <= num_threads <= kMaxSharedPoolThreads (both checked).
void GemvBatch(const float* w, const float* x, int64_t m, int64_t rows, int64_t cols, float* y,
               int num_threads, const float* bias = nullptr);
// The batch size up to which GemvBatch beats OpenBLAS sgemm on the SIMD target Highway picked
// (model::Linear switches there): kGemvMaxBatch with AVX-512's 32 registers, 16 otherwise.
int64_t GemvBatchLimit();

// Asks Linux to back the 2 MiB-aligned interior of [data, data + count) with transparent huge
// pages now (madvise MADV_HUGEPAGE, then MADV_COLLAPSE, Linux 6.1+), for matrices that Gemv
// streams every decode step: with 4 KiB pages the streams cross a page, and miss the TLB,
// every 4 KiB. Advice only: the contents never change, and where the kernel declines (THP
// "never", an older kernel, a region under 2 MiB) the pages stay as they were. Costs about
// 0.3 s per GB, once. For memory already touched; a buffer placed by AllocateLargeAware
// (src/base/large_buffer.h) is advised before its first touch, and this only collapses the
// pages the kernel could not make huge then.
void AdviseHugePages(const float* data, int64_t count);

}  // namespace kvcheck::model

#endif  // KVCHECK_SRC_MODEL_GEMV_H_
