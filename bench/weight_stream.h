// File: weight_stream.h
// WeightStream: the weight bytes one decode step of a decoder reads, where the decoder keeps
// them, and a timed pass that does nothing but read them: the paired bandwidth limit of the
// generation benchmark.
//
// The benchmark's other limit is the best of many 1 GiB passes over a buffer of its own,
// measured around the runs; on a VM whose bandwidth moves by tens of percent from minute to
// minute, a generation averaged over its 200 steps sits below such a best whatever it does.
// Timed beside each step instead (a pass, then a step, in alternating order), a pass over
// the same bytes at the same addresses, on the same pages, on the same threads, is the floor
// a step cannot go below in those same seconds: what a step does besides reading its weights
// (attention, norms, the per-token fixed costs) is what separates the two. The same bytes
// copied into one buffer on transparent huge pages (a Storage) give a second placement, so
// that where the decoder keeps its weights (its arena, decoder_weights.h: the same order with
// 64-byte padding between tensors, on the huge pages the kernel granted) cannot lower the
// limit: it is the faster of the two placements and two ways of reading.
#ifndef KVCHECK_BENCH_WEIGHT_STREAM_H_
#define KVCHECK_BENCH_WEIGHT_STREAM_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "src/model/decoder_weights.h"
#include "src/tensor/storage.h"

namespace kvcheck::bench {

class WeightStream {
 public:
  // Every weight array of `weights` in the order a decode step reads them (each layer's norms,
  // projections and biases, the final norm, the tied output head), with one row of the
  // position table (gpt2), which is all a step reads of it; empty arrays (absent biases)
  // are skipped. The arrays must outlive this object.
  // Also makes the one-buffer copy (bytes() more memory, about 0.3 s per GB).
  explicit WeightStream(const model::DecoderWeights& weights);

  int64_t bytes() const { return 4 * floats_; }

  enum class Placement { kInPlace, kOneBuffer };

  struct PassResult {
    double seconds = 0;  // the pass alone
    double sum = 0;      // of every float read (what keeps the reads from being dropped)
  };
  // One pass over the arrays on `threads` threads of the shared pool the decoder uses
  // (src/base/thread_pool.h), which claim 32 x `threads` equal shares of the arrays laid end
  // to end, reading each array front to back or, when `interleaved`, as 8 streams side by
  // side (bench/streaming_sum.h); kOneBuffer reads the copy instead, as one array.
  // REQUIRES: 1 <= threads <= 256.
  PassResult TimedPass(int threads, bool interleaved, Placement placement) const;

 private:
  static PassResult Pass(const std::vector<absl::Span<const float>>& arrays, int64_t floats,
                         int threads, bool interleaved);

  std::vector<absl::Span<const float>> arrays_;
  int64_t floats_ = 0;
  // The one-buffer copy: a Storage, which puts buffers of 2 MiB or more on huge pages.
  std::shared_ptr<Storage> copy_;
};

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_WEIGHT_STREAM_H_
