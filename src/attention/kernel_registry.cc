#include "src/attention/kernel_registry.h"

#include "src/attention/flash_attention.h"
#include "src/attention/naive_attention.h"

namespace kvcheck {
namespace {

absl::StatusOr<Tensor> RunNaive(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int) {
  return NaiveAttention(q, k, v, params);
}

absl::StatusOr<Tensor> RunNaiveGrouped(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const AttentionParams& params, int) {
  return NaiveAttention(q, k, v, params, {.repeat_kv = false});
}

absl::StatusOr<Tensor> RunFlash(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int num_threads) {
  return FlashAttention(q, k, v, params, {.num_threads = num_threads});
}

absl::StatusOr<Tensor> RunFlashScalar(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params, int num_threads) {
  return FlashAttention(q, k, v, params,
                        {.num_threads = num_threads, .path = FlashPath::kScalar});
}

// Three key-range splits whatever the shape: the partial-state merge on every call, not only
// on long decode rows.
absl::StatusOr<Tensor> RunFlashSplit3(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params, int num_threads) {
  return FlashAttention(q, k, v, params, {.num_threads = num_threads, .kv_splits = 3});
}

// name, summary, run, threaded.
const AttentionKernel kKernels[] = {
    {"naive", "matmul + softmax (OpenBLAS), KV heads repeated per query head", RunNaive, false},
    {"naive/grouped", "matmul + softmax, query heads of a KV head stacked in one product",
     RunNaiveGrouped, false},
    {"flash", "CPU flash attention, Highway SIMD path, automatic key splits", RunFlash, true},
    {"flash/scalar", "CPU flash attention, scalar path", RunFlashScalar, true},
    {"flash/split3", "CPU flash attention, three key-range splits merged", RunFlashSplit3,
     true},
};

}  // namespace

absl::Span<const AttentionKernel> AttentionKernels() { return kKernels; }

const AttentionKernel* FindAttentionKernel(const std::string& name) {
  for (const AttentionKernel& kernel : kKernels) {
    if (name == kernel.name) return &kernel;
  }
  return nullptr;
}

}  // namespace kvcheck
