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

constexpr int64_t kTwoPassBlocks = 32;  // sdpa_2pass.metal's kBlocks

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


// The parameter block and the bindings every kernel shares (buffers 0..8), and the output.
struct Prepared {
  SdpaParams p{};
  Tensor out;
  std::vector<float> alibi, dummy = {0.0f};
  std::vector<long> q_positions, kv_positions, no_positions = {0};
  msl::DispatchDescription d;
};

absl::Status Prepare(const Tensor& q, const Tensor& k, const Tensor& v,
                     const AttentionParams& params, const char* kernel, Prepared& w) {
  KV_ASSIGN_OR_RETURN(const AttentionShape shape, ValidateAttention(q, k, v, params));
  if (shape.head_dim > kMaxHeadDim) {
    return absl::InvalidArgumentError(absl::StrCat(kernel, ": head dim ", shape.head_dim,
                                                   " over the kernels' ", kMaxHeadDim));
  }
  KV_ASSIGN_OR_RETURN(w.out, Tensor::Zeros(q.dtype(), {shape.batch, shape.num_heads,
                                                       shape.q_len, shape.head_dim}));
  SdpaParams& p = w.p;
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
  msl::DispatchDescription& d = w.d;
  d.buffers[0] = Bind(q);
  d.buffers[1] = Bind(k);
  d.buffers[2] = Bind(v);
  d.buffers[3] = Bind(w.out);
  d.buffers[4] = {&w.p, sizeof w.p, 0};
  // Unused bindings still point at something, as a Metal host binds a dummy buffer.
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
  return absl::OkStatus();
}

uint32_t U32(int64_t n) { return static_cast<uint32_t>(n); }

}  // namespace

absl::StatusOr<Tensor> MetalVectorAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const AttentionParams& params) {
  Prepared w;
  KV_RETURN_IF_ERROR(Prepare(q, k, v, params, "metal_vector", w));
  if (w.out.num_elements() == 0) return w.out;
  w.d.kernel = absl::StrCat("sdpa_vector_", Suffix(q.dtype()));
  w.d.threadgroups = {U32(w.p.q_len), U32(w.p.heads), U32(w.p.batch)};
  w.d.threads_per_threadgroup = {1024, 1, 1};
  KV_RETURN_IF_ERROR(msl::Dispatch(w.d));
  return w.out;
}

absl::StatusOr<Tensor> MetalTwoPassAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionParams& params) {
  Prepared w;
  KV_RETURN_IF_ERROR(Prepare(q, k, v, params, "metal_2pass", w));
  if (w.out.num_elements() == 0) return w.out;
  // The blocks' states: (B, H, Sq, 32) maxima and sums, (B, H, Sq, 32, D) accumulators.
  const size_t states = static_cast<size_t>(w.p.batch) * w.p.heads * w.p.q_len * kTwoPassBlocks;
  std::vector<float> block_out(states * w.p.head_dim), block_max(states), block_sum(states);
  w.d.buffers[9] = BindVector(block_out);
  w.d.buffers[10] = BindVector(block_max);
  w.d.buffers[11] = BindVector(block_sum);
  w.d.kernel = absl::StrCat("sdpa_2pass_blocks_", Suffix(q.dtype()));
  w.d.threadgroups = {U32(w.p.q_len), U32(w.p.heads), U32(w.p.batch * kTwoPassBlocks)};
  w.d.threads_per_threadgroup = {128, 1, 1};
  KV_RETURN_IF_ERROR(msl::Dispatch(w.d));
  w.d.kernel = absl::StrCat("sdpa_2pass_merge_", Suffix(q.dtype()));
  w.d.threadgroups = {U32(w.p.q_len), U32(w.p.heads), U32(w.p.batch)};
  w.d.threads_per_threadgroup = {32, 1, 1};
  KV_RETURN_IF_ERROR(msl::Dispatch(w.d));
  return w.out;
}

absl::StatusOr<Tensor> MetalTiledAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const AttentionParams& params) {
  Prepared w;
  KV_RETURN_IF_ERROR(Prepare(q, k, v, params, "metal_tiled", w));
  if (w.out.num_elements() == 0) return w.out;
  w.d.kernel = absl::StrCat("sdpa_tiled_", Suffix(q.dtype()));
  w.d.threadgroups = {U32((w.p.q_len + kSdpaTiledRows - 1) / kSdpaTiledRows), U32(w.p.heads),
                      U32(w.p.batch)};
  w.d.threads_per_threadgroup = {U32(kSdpaTiledSimdgroups * 32), 1, 1};
  KV_RETURN_IF_ERROR(msl::Dispatch(w.d));
  return w.out;
}

MetalKernelChoice ChooseMetalKernel(int64_t q_len, int64_t kv_len) {
  if (q_len > kVectorMaxRows) return MetalKernelChoice::kTiled;
  return kv_len >= kTwoPassMinKeys ? MetalKernelChoice::kTwoPass : MetalKernelChoice::kVector;
}

absl::StatusOr<Tensor> MetalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params) {
  // The shape decides; a malformed call gets ValidateAttention's error from whichever kernel.
  const int64_t q_len = q.rank() == 4 ? q.dim(2) : 0, kv_len = k.rank() == 4 ? k.dim(2) : 0;
  switch (ChooseMetalKernel(q_len, kv_len)) {
    case MetalKernelChoice::kVector:
      return MetalVectorAttention(q, k, v, params);
    case MetalKernelChoice::kTwoPass:
      return MetalTwoPassAttention(q, k, v, params);
    case MetalKernelChoice::kTiled:
      break;
  }
  return MetalTiledAttention(q, k, v, params);
}

}  // namespace kvcheck::metal_attention
