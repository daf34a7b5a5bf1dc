// File: attention_kernels.h
// The attention kernels a decoder can run, by name: "naive" (matmul + softmax, OpenBLAS) and
// "flash" (the CPU flash kernel). A new kernel is one line in the table (attention_kernels.cc);
// the generation properties, the benchmark and kvcheck iterate the table.
#ifndef KVCHECK_SRC_MODEL_ATTENTION_KERNELS_H_
#define KVCHECK_SRC_MODEL_ATTENTION_KERNELS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck::model {

struct AttentionKernel {
  const char* name;
  // Errors: those of the kernel (attention_params.h).
  absl::StatusOr<Tensor> (*run)(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int num_threads);
};

absl::Span<const AttentionKernel> AttentionKernels();
// nullptr if there is none of that name.
const AttentionKernel* FindAttentionKernel(const std::string& name);

}  // namespace kvcheck::model

#endif  // KVCHECK_SRC_MODEL_ATTENTION_KERNELS_H_
