// sdpa_vector: attention of one query row per threadgroup (the decode shape), the decomposition of
// MLX's and candle's sdpa_vector, with the whole attention contract
// (src/attention/attention_params.h) in this path (candle's vector path ignores masks and
// causality): a threadgroup of 32 simdgroups x 32 lanes per (query row i, head h, batch row b)
// attends over every key (sdpa_common.h). Inputs in T (float, half, bfloat), accumulation in f32,
// output rounded to T once.
#include <metal_stdlib>

using namespace metal;

#include "sdpa_common.h"

template <typename T>
[[kernel]] void sdpa_vector(
    const device T* q [[buffer(0)]],
    const device T* k [[buffer(1)]],
    const device T* v [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant SdpaParams& p [[buffer(4)]],
    const device float* mask [[buffer(5)]],
    const device float* alibi [[buffer(6)]],
    const device long* q_positions [[buffer(7)]],
    const device long* kv_positions [[buffer(8)]],
    uint3 row [[threadgroup_position_in_grid]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float maxima[32];
  threadgroup float sums[32];
  threadgroup float partials[32 * kMergeChunk];
  AttendKeys<T, 32>(q, k, v, out, p, mask, alibi, q_positions, kv_positions, int(row.x), int(row.y),
             int(row.z), 0, p.kv_len, simd_group, lane, tid, maxima, sums, partials,
             (device float*)nullptr, (device float*)nullptr, (device float*)nullptr);
}

template [[host_name("sdpa_vector_float")]] [[kernel]] decltype(sdpa_vector<float>) sdpa_vector<float>;
template [[host_name("sdpa_vector_half")]] [[kernel]] decltype(sdpa_vector<half>) sdpa_vector<half>;
template [[host_name("sdpa_vector_bfloat")]] [[kernel]] decltype(sdpa_vector<bfloat>) sdpa_vector<bfloat>;
