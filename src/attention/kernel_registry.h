// File: kernel_registry.h
// The attention-kernel registry: every attention kernel of the engine by name, the way the
// cache registry (src/cache/registry.h) lists the strategies. The kernel laws, the cache state
// machine's Attend command, the decoders, the generation laws, the fuzzers and kvcheck iterate
// this table, so a new kernel (or a variant of one: a path, a split count) is one line in
// kernel_registry.cc and gets every check.
//
// Every kernel honours the contract of attention_params.h within the bound of
// reference/ERROR_BOUND.md; `num_threads` may change rounding (split counts) but never the
// contract.
#ifndef KVCHECK_SRC_ATTENTION_KERNEL_REGISTRY_H_
#define KVCHECK_SRC_ATTENTION_KERNEL_REGISTRY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

using AttentionKernelFn = absl::StatusOr<Tensor> (*)(const Tensor& q, const Tensor& k,
                                                     const Tensor& v,
                                                     const AttentionParams& params,
                                                     int num_threads);

struct AttentionKernel {
  const char* name;     // "naive", "flash", "flash/scalar", ...
  const char* summary;  // one line for listings
  // Errors: those of the kernel (attention_params.h). REQUIRES: 1 <= num_threads <= 256.
  AttentionKernelFn run;
  // num_threads changes how the work is divided (the laws run it with 1 and 2 threads).
  bool threaded;
};

// Every registered kernel, in a fixed order.
absl::Span<const AttentionKernel> AttentionKernels();
// nullptr if there is none of that name.
const AttentionKernel* FindAttentionKernel(const std::string& name);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_ATTENTION_KERNEL_REGISTRY_H_
