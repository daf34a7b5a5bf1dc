// Host side of the Metal attention kernels (metal_attention.h).
#include "src/metal/metal_attention.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"

namespace kvcheck::metal_attention {
namespace {

constexpr int64_t kTwoPassBlocks = 32;  // sdpa_2pass.metal's kBlocks

// A tensor's binding: its storage, and its view's offset in bytes (Metal's setBuffer:offset:).
msl::BufferArgument Bind(const Tensor& t) {
  return {t.storage()->bytes(), static_cast<size_t>(t.storage()->num_bytes()),
          static_cast<size_t>(t.layout().offset() * DTypeSize(t.dtype()))};
}

template <typename T>
msl::BufferArgument BindVector(std::vector<T>& values) {
  return {values.data(), values.size() * sizeof(T), 0};
}

void Strides(const Tensor& t, long out[4]) {
  for (int d = 0; d < 4; ++d) out[d] = static_cast<long>(t.layout().stride(d));
}

const char* Suffix(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return "half";
    case DType::kBF16:
      return "bfloat";
    case DType::kF32:
      break;
  }
  return "float";
}

const char* KernelName(MetalKernelChoice kernel) {
  switch (kernel) {
    case MetalKernelChoice::kVector:
      return "metal_vector";
    case MetalKernelChoice::kTwoPass:
      return "metal_2pass";
    case MetalKernelChoice::kTiled:
      break;
  }
  return "metal_tiled";
}

uint32_t U32(int64_t n) { return static_cast<uint32_t>(n); }

absl::StatusOr<Tensor> Run(MetalKernelChoice kernel, const Tensor& q, const Tensor& k,
                           const Tensor& v, const AttentionParams& params) {
  KV_ASSIGN_OR_RETURN(std::unique_ptr<MetalCall> call,
                      PrepareMetalCall(kernel, q, k, v, params));
  return RunMetalCall(*call);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetalCall>> PrepareMetalCall(MetalKernelChoice kernel,
                                                            const Tensor& q, const Tensor& k,
                                                            const Tensor& v,
                                                            const AttentionParams& params,
                                                            const std::string& kernel_prefix) {
  const char* name = KernelName(kernel);
  KV_ASSIGN_OR_RETURN(const AttentionShape shape, ValidateAttention(q, k, v, params));
  if (shape.head_dim > kSdpaMaxHeadDim) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": head dim ", shape.head_dim,
                                                   " over the kernels' ", kSdpaMaxHeadDim));
  }
  auto call = std::make_unique<MetalCall>();
  MetalCall& w = *call;
  w.kernel = kernel;
  w.kernel_prefix = kernel_prefix;
  KV_ASSIGN_OR_RETURN(w.out, Tensor::Zeros(q.dtype(), {shape.batch, shape.num_heads,
                                                       shape.q_len, shape.head_dim}));
  SdpaParams& p = w.params;
  p.batch = static_cast<int>(shape.batch);
  p.heads = static_cast<int>(shape.num_heads);
  p.kv_heads = static_cast<int>(shape.num_kv_heads);
  p.q_len = static_cast<int>(shape.q_len);
  p.kv_len = static_cast<int>(shape.kv_len);
  p.head_dim = static_cast<int>(shape.head_dim);
  Strides(q, p.q_strides);
  Strides(k, p.k_strides);
  Strides(v, p.v_strides);
  p.scale = params.scale.value_or(1.0f / std::sqrt(static_cast<float>(shape.head_dim)));
  p.softcap = params.softcap;
  p.causal = params.causal ? 1 : 0;
  p.window = static_cast<long>(params.window);
  p.has_alibi = params.alibi_slopes.empty() ? 0 : 1;
  p.has_mask = params.mask.has_value() ? 1 : 0;
  p.has_q_positions = params.q_positions.empty() ? 0 : 1;
  p.has_kv_positions = params.kv_positions.empty() ? 0 : 1;
  msl::DispatchDescription& d = w.dispatch;
  d.buffers[0] = Bind(q);
  d.buffers[1] = Bind(k);
  d.buffers[2] = Bind(v);
  d.buffers[3] = Bind(w.out);
  d.buffers[4] = {&w.params, sizeof w.params, 0};
  w.alibi = params.alibi_slopes;
  w.q_positions.assign(params.q_positions.begin(), params.q_positions.end());
  w.kv_positions.assign(params.kv_positions.begin(), params.kv_positions.end());
  if (params.mask.has_value()) {
    const Tensor& m = *params.mask;
    Strides(m, p.mask_strides);
    p.mask_batch = static_cast<int>(m.dim(0));
    p.mask_heads = static_cast<int>(m.dim(1));
    d.buffers[5] = Bind(m);
  } else {
    d.buffers[5] = BindVector(w.dummy);
  }
  d.buffers[6] = w.alibi.empty() ? BindVector(w.dummy) : BindVector(w.alibi);
  d.buffers[7] = w.q_positions.empty() ? BindVector(w.no_positions) : BindVector(w.q_positions);
  d.buffers[8] = w.kv_positions.empty() ? BindVector(w.no_positions) : BindVector(w.kv_positions);
  const std::string suffix = Suffix(q.dtype());
  switch (kernel) {
    case MetalKernelChoice::kVector:
      d.kernel = absl::StrCat(kernel_prefix, "sdpa_vector_", suffix);
      d.threadgroups = {U32(p.q_len), U32(p.heads), U32(p.batch)};
      d.threads_per_threadgroup = {1024, 1, 1};
      break;
    case MetalKernelChoice::kTwoPass:
      d.kernel = absl::StrCat(kernel_prefix, "sdpa_2pass_blocks_", suffix);
      d.threadgroups = {U32(p.q_len), U32(p.heads), U32(p.batch * kTwoPassBlocks)};
      d.threads_per_threadgroup = {128, 1, 1};
      break;
    case MetalKernelChoice::kTiled:
      d.kernel = absl::StrCat(kernel_prefix, "sdpa_tiled_", suffix);
      d.threadgroups = {U32((p.q_len + kSdpaTiledRows - 1) / kSdpaTiledRows), U32(p.heads),
                        U32(p.batch)};
      d.threads_per_threadgroup = {U32(kSdpaTiledSimdgroups * 32), 1, 1};
      break;
  }
  return call;
}

absl::StatusOr<Tensor> RunMetalCall(MetalCall& call) {
  if (call.out.num_elements() == 0) return call.out;
  if (call.kernel != MetalKernelChoice::kTwoPass) {
    KV_RETURN_IF_ERROR(msl::Dispatch(call.dispatch));
    return call.out;
  }
  // The blocks' states: (B, H, Sq, 32) maxima and sums, (B, H, Sq, 32, D) accumulators.
  const SdpaParams& p = call.params;
  const size_t states = static_cast<size_t>(p.batch) * p.heads * p.q_len * kTwoPassBlocks;
  std::vector<float> block_out(states * p.head_dim), block_max(states), block_sum(states);
  msl::DispatchDescription& d = call.dispatch;
  d.buffers[9] = BindVector(block_out);
  d.buffers[10] = BindVector(block_max);
  d.buffers[11] = BindVector(block_sum);
  if (const absl::Status status = msl::Dispatch(d); !status.ok()) {
    for (int index : {9, 10, 11}) d.buffers.erase(index);
    return status;
  }
  msl::DispatchDescription merge = d;
  const std::string suffix = d.kernel.substr(d.kernel.rfind('_') + 1);
  merge.kernel = absl::StrCat(call.kernel_prefix, "sdpa_2pass_merge_", suffix);
  merge.threadgroups = {U32(p.q_len), U32(p.heads), U32(p.batch)};
  merge.threads_per_threadgroup = {32, 1, 1};
  const absl::Status merged = msl::Dispatch(merge);
  for (int index : {9, 10, 11}) d.buffers.erase(index);  // they pointed at this frame
  KV_RETURN_IF_ERROR(merged);
  return call.out;
}

absl::StatusOr<Tensor> MetalVectorAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const AttentionParams& params) {
  return Run(MetalKernelChoice::kVector, q, k, v, params);
}

absl::StatusOr<Tensor> MetalTwoPassAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionParams& params) {
  return Run(MetalKernelChoice::kTwoPass, q, k, v, params);
}

absl::StatusOr<Tensor> MetalTiledAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const AttentionParams& params) {
  return Run(MetalKernelChoice::kTiled, q, k, v, params);
}

int64_t EmulatorMicroseconds(MetalKernelChoice kernel, int64_t batch_heads, int64_t q_len,
                             int64_t kv_len) {
  switch (kernel) {
    case MetalKernelChoice::kVector:
      return batch_heads * q_len * (100 + kv_len * 9 / 2);
    case MetalKernelChoice::kTwoPass:
      return batch_heads * q_len * (400 + kv_len * 9 / 2);
    case MetalKernelChoice::kTiled:
      break;
  }
  const int64_t rows = (q_len + kSdpaTiledRows - 1) / kSdpaTiledRows * kSdpaTiledRows;
  return batch_heads * rows * (10 + kv_len);
}

MetalKernelChoice ChooseMetalKernel(int64_t q_len, int64_t kv_len) {
  if (q_len > kVectorMaxRows) return MetalKernelChoice::kTiled;
  return kv_len >= kTwoPassMinKeys ? MetalKernelChoice::kTwoPass : MetalKernelChoice::kVector;
}

absl::StatusOr<Tensor> MetalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params) {
  // The shape decides; a malformed call gets ValidateAttention's error from the kernel.
  const int64_t q_len = q.rank() == 4 ? q.dim(2) : 0, kv_len = k.rank() == 4 ? k.dim(2) : 0;
  return Run(ChooseMetalKernel(q_len, kv_len), q, k, v, params);
}

}  // namespace kvcheck::metal_attention
