// sdpa_2pass: attention for long key ranges in two dispatches, the decomposition of MLX's and
// candle's sdpa_vector_2pass, with the whole contract in both passes:
//   1. sdpa_2pass_blocks: the keys split into 32 blocks; a threadgroup of 4 simdgroups per
//      (query row, head, batch row, block) attends over its block (sdpa_common.h) and stores
//      the block's state, unnormalised, in f32 (not in the input dtype, as candle's does:
//      no extra rounding to bound); a block with no allowed key stores max -inf, sum 0;
//   2. sdpa_2pass_merge: one simdgroup per row merges the 32 states (weights exp(max_b - M),
//      every block's own max, so an infinite or NaN score still poisons the row; a row
//      whose blocks have no key at all is 0), rounds to T once.
#include <metal_stdlib>

using namespace metal;

#include "sdpa_common.h"

constant constexpr int kBlocks = 32;
constant constexpr int kBlockSimdgroups = 4;

template <typename T>
[[kernel]] void sdpa_2pass_blocks(
    const device T* q [[buffer(0)]],
    const device T* k [[buffer(1)]],
    const device T* v [[buffer(2)]],
    constant SdpaParams& p [[buffer(4)]],
    const device float* mask [[buffer(5)]],
    const device float* alibi [[buffer(6)]],
    const device long* q_positions [[buffer(7)]],
    const device long* kv_positions [[buffer(8)]],
    device float* block_out [[buffer(9)]],
    device float* block_max [[buffer(10)]],
    device float* block_sum [[buffer(11)]],
    uint3 group [[threadgroup_position_in_grid]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float maxima[kBlockSimdgroups];
  threadgroup float sums[kBlockSimdgroups];
  threadgroup float partials[kBlockSimdgroups * kMergeChunk];
  const int b = int(group.z) / kBlocks, block = int(group.z) % kBlocks;
  const int per_block = (p.kv_len + kBlocks - 1) / kBlocks;
  const int begin = min(block * per_block, p.kv_len);
  const int end = min(begin + per_block, p.kv_len);
  const long slot = ((long(b) * p.heads + long(group.y)) * p.q_len + long(group.x)) * kBlocks + block;
  AttendKeys<T, kBlockSimdgroups>(q, k, v, (device T*)nullptr, p, mask, alibi, q_positions,
                                  kv_positions, int(group.x), int(group.y), b, begin, end,
                                  simd_group, lane, tid, maxima, sums, partials,
                                  block_out + slot * p.head_dim, block_max + slot,
                                  block_sum + slot);
}

template <typename T>
[[kernel]] void sdpa_2pass_merge(
    device T* out [[buffer(3)]],
    constant SdpaParams& p [[buffer(4)]],
    const device float* block_out [[buffer(9)]],
    const device float* block_max [[buffer(10)]],
    const device float* block_sum [[buffer(11)]],
    uint3 row [[threadgroup_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]]) {
  const long first = ((long(row.z) * p.heads + long(row.y)) * p.q_len + long(row.x)) * kBlocks;
  float global_max, total;
  bool poisoned;
  MergeStates(block_max + first, block_sum + first, kBlocks, global_max, total, poisoned);
  for (int d = int(lane); d < p.head_dim; d += kLanes) {
    float value = 0.0f;
    for (int blk = 0; blk < kBlocks; ++blk) {
      value += block_out[(first + blk) * p.head_dim + d] *
               StateWeight(block_max[first + blk], global_max);
    }
    const float result = MergedResult(value, total, poisoned);
    out[((long(row.z) * p.heads + long(row.y)) * p.q_len + long(row.x)) * p.head_dim + d] =
        T(result);
  }
}

template [[host_name("sdpa_2pass_blocks_float")]] [[kernel]] decltype(sdpa_2pass_blocks<float>) sdpa_2pass_blocks<float>;
template [[host_name("sdpa_2pass_blocks_half")]] [[kernel]] decltype(sdpa_2pass_blocks<half>) sdpa_2pass_blocks<half>;
template [[host_name("sdpa_2pass_blocks_bfloat")]] [[kernel]] decltype(sdpa_2pass_blocks<bfloat>) sdpa_2pass_blocks<bfloat>;
template [[host_name("sdpa_2pass_merge_float")]] [[kernel]] decltype(sdpa_2pass_merge<float>) sdpa_2pass_merge<float>;
template [[host_name("sdpa_2pass_merge_half")]] [[kernel]] decltype(sdpa_2pass_merge<half>) sdpa_2pass_merge<half>;
template [[host_name("sdpa_2pass_merge_bfloat")]] [[kernel]] decltype(sdpa_2pass_merge<bfloat>) sdpa_2pass_merge<bfloat>;
