// File: flash_problem.h
// Internal to the CPU flash kernel (flash_attention.h): the validated problem as raw strided
// accessors, the unit of work (a block of query rows sharing one KV head, over a range of
// keys), and the partial online-softmax state of a row. The scalar path
// (flash_block_scalar.cc) and the Highway path (flash_block_simd.cc) implement the same
// ProcessBlock contract on top of it.
#ifndef KVCHECK_SRC_ATTENTION_FLASH_PROBLEM_H_
#define KVCHECK_SRC_ATTENTION_FLASH_PROBLEM_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "src/attention/attention_params.h"
#include "src/tensor/dtype.h"

namespace kvcheck::flash_internal {

// Rows of a (B, heads, S, D) operand, any dtype and strides (in elements).
struct Operand {
  const std::byte* base = nullptr;  // element (0, 0, 0, 0)
  DType dtype = DType::kF32;
  int64_t stride[4] = {0, 0, 0, 0};

  const std::byte* Row(int64_t b, int64_t h, int64_t s) const {
    return base + (b * stride[0] + h * stride[1] + s * stride[2]) * DTypeSize(dtype);
  }
  // The row as f32 in place when it already is one (f32, unit inner stride), else null.
  const float* F32Row(int64_t b, int64_t h, int64_t s) const {
    return dtype == DType::kF32 && stride[3] == 1 ? reinterpret_cast<const float*>(Row(b, h, s))
                                                  : nullptr;
  }
  // Widens row (b, h, s) to f32 into out[0, head_dim).
  void ReadRow(int64_t b, int64_t h, int64_t s, int64_t head_dim, float* out) const;
};

// Keys per tile of the inner loop.
inline constexpr int64_t kFlashTile = 32;
// The most keys per tile of the dense decode kernel (FlashOptions::decode_tile_keys).
inline constexpr int64_t kMaxDecodeTile = 4096;

// Largest vector width any compiled target uses, in floats: rows are padded to a multiple.
inline constexpr int64_t kRowPad = 16;
inline int64_t PaddedDim(int64_t head_dim) { return (head_dim + kRowPad - 1) / kRowPad * kRowPad; }

struct FlashProblem {
  AttentionShape shape;
  Operand q, k, v;
  float scale = 1.0f;
  float softcap = 0.0f;
  float inverse_softcap = 0.0f;
  const float* alibi_slopes = nullptr;     // H slopes or null
  bool causal = false;
  int64_t window = 0;
  const int64_t* q_positions = nullptr;    // (B, Sq) or null for the default
  const int64_t* kv_positions = nullptr;   // (B, Skv) or null for the default
  const float* mask = nullptr;             // f32 element (0, 0, 0, 0) or null
  int64_t mask_stride[4] = {0, 0, 0, 0};   // 0 along broadcast dimensions
  // Prefill: K of every (b, kv_head) widened and transposed once, so that the blocks of
  // query rows (which all walk the same keys) do not each transpose it again. Element
  // (b, kv_head, d, j) at k_transposed[((b * KH + kv_head) * PaddedDim(D) + d) * kt_stride + j],
  // zero for d >= D and j >= Skv. Null for decode.
  const float* k_transposed = nullptr;
  // Skv rounded up to a multiple of kFlashTile, plus a tile (the prefill kernel reads two
  // tiles from any tile's start) and a cache line (16 floats, so that the rows of a tile do
  // not share L1 sets when the rest is a power of two).
  int64_t kt_stride = 0;
  // FlashOptions::decode_tile_keys: 0, or the dense decode kernel's keys per tile.
  int64_t decode_tile_keys = 0;

  int64_t QueryPosition(int64_t b, int64_t i) const {
    return q_positions != nullptr ? q_positions[b * shape.q_len + i]
                                  : shape.kv_len - shape.q_len + i;
  }
  int64_t KeyPosition(int64_t b, int64_t j) const {
    return kv_positions != nullptr ? kv_positions[b * shape.kv_len + j] : j;
  }
  float MaskValue(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return mask == nullptr ? 0.0f
                           : mask[b * mask_stride[0] + h * mask_stride[1] + i * mask_stride[2] +
                                  j * mask_stride[3]];
  }
  // Mask row (b, h, i) at key 0 (its keys mask_stride[3] apart). REQUIRES: mask != null.
  const float* MaskRow(int64_t b, int64_t h, int64_t i) const {
    return mask + b * mask_stride[0] + h * mask_stride[1] + i * mask_stride[2];
  }
  float Slope(int64_t h) const { return alibi_slopes != nullptr ? alibi_slopes[h] : 0.0f; }
};

// Query rows of one batch row and KV head (heads in the KV head's group, query indices),
// over keys [key_begin, key_end).
inline constexpr int kMaxBlockRows = 48;
struct RowBlock {
  int64_t batch = 0;
  int64_t kv_head = 0;
  int num_rows = 0;
  int64_t head[kMaxBlockRows] = {};
  int64_t query[kMaxBlockRows] = {};
  int64_t key_begin = 0;
  int64_t key_end = 0;
};

// Online-softmax state of one query row over the keys seen so far:
//   max = m, sum = l = sum_j exp(s_j - m), acc[d] = sum_j exp(s_j - m) v_j[d].
struct RowState {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  int64_t allowed = 0;  // keys that passed the causal/window/mask rules
  bool nan = false;     // a NaN or +inf score: the row is NaN
  float* acc = nullptr; // PaddedDim(D) floats, zeroed by the caller
};

// Adds the keys [block.key_begin, block.key_end) to the states of the block's rows.
void ProcessBlockScalar(const FlashProblem& problem, const RowBlock& block, RowState* states);
// The Highway path (flash_decode_simd.cc): splits the keys into runs for its dense decode
// kernel (every row sees every key: no rule removes one, and no mask value is -inf, +inf or
// NaN) and for ProcessTilesSimd.
void ProcessBlockSimd(const FlashProblem& problem, const RowBlock& block, RowState* states);
// The general tile kernel: any rules, any rows (flash_block_simd.cc).
void ProcessTilesSimd(const FlashProblem& problem, const RowBlock& block, RowState* states);

// into := the state over the keys of both (the 2-pass / split-KV merge):
//   m = max(m1, m2); l = l1 exp(m1 - m) + l2 exp(m2 - m); acc likewise.
void MergeRowState(RowState& into, const RowState& from, int64_t head_dim);

// The output row: 0 without allowed keys, NaN for a NaN row or a zero sum (all scores -inf),
// else acc / sum.
void FinalizeRow(const RowState& state, int64_t head_dim, float* out);

}  // namespace kvcheck::flash_internal

#endif  // KVCHECK_SRC_ATTENTION_FLASH_PROBLEM_H_
