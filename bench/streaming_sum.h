// File: streaming_sum.h
// The streaming-read floor of a benchmark that reads floats: a sum of every float, with the
// widest vectors this CPU has (Highway dynamic dispatch, like read_bandwidth.h). A kernel
// that reads the same bytes cannot beat this by much, so a benchmark reports its own
// bandwidth against StreamingSum's over the same working set, measured in the same run.
// (Compiled for Highway's static target instead, the sum ran on 128-bit vectors and
// understated the floor about 4x when the data was hot.)
#ifndef KVCHECK_BENCH_STREAMING_SUM_H_
#define KVCHECK_BENCH_STREAMING_SUM_H_

#include <cstdint>

namespace kvcheck::bench {

// Sum of p[0, n), four independent accumulators (the adds would otherwise wait on each other).
// The tail past the last multiple of four vectors is summed too.
float StreamingSum(const float* p, int64_t n);

// The same sum read as 8 segments side by side (8 streams at once, which some machines read
// faster than one), each segment a few dozen cache lines shorter than an eighth so that the
// streams do not start a power of two apart (bench/read_bandwidth.cc: such spacing halved the
// figure by DRAM bank conflicts); the rest front to back. Arrays under 64 Ki floats are read
// front to back.
float InterleavedStreamingSum(const float* p, int64_t n);

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_STREAMING_SUM_H_
