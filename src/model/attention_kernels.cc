#include "src/model/attention_kernels.h"

#include "src/attention/flash_attention.h"
#include "src/attention/naive_attention.h"

namespace kvcheck::model {
namespace {

absl::StatusOr<Tensor> RunNaive(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int) {
  return NaiveAttention(q, k, v, params);
}

absl::StatusOr<Tensor> RunFlash(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int num_threads) {
  return FlashAttention(q, k, v, params, {.num_threads = num_threads});
}

constexpr AttentionKernel kKernels[] = {
    {"naive", &RunNaive},
    {"flash", &RunFlash},
};

}  // namespace

absl::Span<const AttentionKernel> AttentionKernels() { return kKernels; }

const AttentionKernel* FindAttentionKernel(const std::string& name) {
  for (const AttentionKernel& kernel : kKernels) {
    if (name == kernel.name) return &kernel;
  }
  return nullptr;
}

}  // namespace kvcheck::model
