#include "bench/weight_stream.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/streaming_sum.h"
#include "src/base/check.h"
#include "src/base/thread_pool.h"

namespace kvcheck::bench {

WeightStream::WeightStream(const model::DecoderWeights& weights) {
  auto add = [this](const model::WeightArray& array) {
    if (array.empty()) return;
    arrays_.emplace_back(array.data(), array.size());
    floats_ += static_cast<int64_t>(array.size());
  };
  const int64_t width = weights.config.width;
  if (static_cast<int64_t>(weights.position_embedding.size()) >= width && width > 0) {
    arrays_.emplace_back(weights.position_embedding.data(), width);
    floats_ += width;
  }
  for (const model::LayerWeights& layer : weights.layers) {
    for (const model::WeightArray* array :
         {&layer.attn_norm_weight, &layer.attn_norm_bias, &layer.wq, &layer.bq, &layer.wk,
          &layer.bk, &layer.wv, &layer.bv, &layer.wo, &layer.bo, &layer.mlp_norm_weight,
          &layer.mlp_norm_bias, &layer.w_up, &layer.b_up, &layer.w_gate, &layer.w_down,
          &layer.b_down}) {
      add(*array);
    }
  }
  add(weights.final_norm_weight);
  add(weights.final_norm_bias);
  add(weights.token_embedding);
  // The copy, written once (Storage advises its huge pages before this first touch).
  absl::StatusOr<std::shared_ptr<Storage>> copy =
      Storage::AllocateUninitialized(DType::kF32, floats_);
  KV_CHECK(copy.ok());
  copy_ = *std::move(copy);
  float* to = copy_->data<float>();
  for (absl::Span<const float> array : arrays_) {
    std::memcpy(to, array.data(), array.size() * sizeof(float));
    to += array.size();
  }
}

WeightStream::PassResult WeightStream::TimedPass(int threads, bool interleaved,
                                                 Placement placement) const {
  if (placement == Placement::kOneBuffer) {
    return Pass({absl::Span<const float>(copy_->data<float>(), floats_)}, floats_, threads,
                interleaved);
  }
  return Pass(arrays_, floats_, threads, interleaved);
}

WeightStream::PassResult WeightStream::Pass(const std::vector<absl::Span<const float>>& arrays,
                                            int64_t floats, int threads, bool interleaved) {
  // Shares claimed dynamically, 32 per thread: with one share per thread, a worker that woke
  // late would leave both shares to the caller, a one-thread pass in a two-thread limit.
  const int64_t parts = int64_t{32} * threads;
  // Each share's sum in its own cache line (no false sharing between the threads).
  struct alignas(64) ShareSum {
    double value = 0;
  };
  std::vector<ShareSum> sums(parts);
  ThreadPool& pool = SharedThreadPool(threads);
  const auto start = std::chrono::steady_clock::now();
  pool.ParallelFor(parts, [&](int64_t part) {
    // This share: floats [begin, end) of the arrays laid end to end.
    const int64_t begin = floats * part / parts, end = floats * (part + 1) / parts;
    double sum = 0;
    int64_t at = 0;  // where the current array starts in the concatenation
    for (absl::Span<const float> array : arrays) {
      const int64_t size = static_cast<int64_t>(array.size());
      const int64_t from = std::max(begin, at), to = std::min(end, at + size);
      if (from < to) {
        sum += interleaved ? InterleavedStreamingSum(array.data() + (from - at), to - from)
                           : StreamingSum(array.data() + (from - at), to - from);
      }
      at += size;
      if (at >= end) break;
    }
    sums[part].value = sum;
  });
  PassResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const ShareSum& share : sums) result.sum += share.value;
  return result;
}

}  // namespace kvcheck::bench
