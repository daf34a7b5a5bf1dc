// Host side of the Metal attention kernels (metal_attention.h).
#include "src/metal/metal_attention.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/metal/kernels/sdpa_params.h"
#include "src/metal/msl_cpu/msl_runtime.h"

namespace kvcheck::metal_attention {
namespace {

constexpr int64_t kMaxHeadDim = 256;

// A tensor's binding: its storage, and its view's offset in bytes.
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

}  // namespace

absl::StatusOr<Tensor> MetalVectorAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const AttentionParams& params) {
  KV_ASSIGN_OR_RETURN(const AttentionShape shape, ValidateAttention(q, k, v, params));
  if (shape.head_dim > kMaxHeadDim) {
    return absl::InvalidArgumentError(absl::StrCat("metal_vector: head dim ", shape.head_dim,
                                                   " over the kernel's ", kMaxHeadDim));
  }
  KV_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(q.dtype(), {shape.batch, shape.num_heads,
                                                            shape.q_len, shape.head_dim}));
  if (out.num_elements() == 0) return out;
  SdpaParams p{};
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
  p.has_positions = params.q_positions.empty() ? 0 : 1;
  msl::DispatchDescription d;
  d.kernel = absl::StrCat("sdpa_vector_", Suffix(q.dtype()));
  d.threadgroups = {static_cast<uint32_t>(shape.q_len), static_cast<uint32_t>(shape.num_heads),
                    static_cast<uint32_t>(shape.batch)};
  d.threads_per_threadgroup = {1024, 1, 1};
  d.buffers[0] = Bind(q);
  d.buffers[1] = Bind(k);
  d.buffers[2] = Bind(v);
  d.buffers[3] = Bind(out);
  d.buffers[4] = {&p, sizeof p, 0};
  // Unused bindings still point at something, as a Metal host binds a dummy buffer.
  std::vector<float> alibi = params.alibi_slopes, dummy = {0.0f};
  std::vector<long> q_positions(params.q_positions.begin(), params.q_positions.end());
  std::vector<long> kv_positions(params.kv_positions.begin(), params.kv_positions.end());
  std::vector<long> no_positions = {0};
  if (params.mask.has_value()) {
    const Tensor& m = *params.mask;
    Strides(m, p.mask_strides);
    p.mask_batch = static_cast<int>(m.dim(0));
    p.mask_heads = static_cast<int>(m.dim(1));
    d.buffers[5] = Bind(m);
  } else {
    d.buffers[5] = BindVector(dummy);
  }
  d.buffers[6] = alibi.empty() ? BindVector(dummy) : BindVector(alibi);
  d.buffers[7] = q_positions.empty() ? BindVector(no_positions) : BindVector(q_positions);
  d.buffers[8] = kv_positions.empty() ? BindVector(no_positions) : BindVector(kv_positions);
  KV_RETURN_IF_ERROR(msl::Dispatch(d));
  return out;
}

}  // namespace kvcheck::metal_attention
