// File: flash_attention.h
// FlashAttention: the CPU flash-attention kernel. One pass over the keys per block of query
// rows with an online softmax (running max m, running sum l, an f32 accumulator of width D):
// the (Sq, Skv) score matrix is never materialised and memory does not grow with Skv.
//
// Contract: attention_params.h (GQA by head mapping, causal by absolute positions, sliding
// window, additive mask, ALiBi, softcap, custom scale, f32/f16/bf16 with f32 accumulation,
// any strides, per-row positions for varlen batches and ring caches, empty slots skipped,
// fully masked rows 0, NaN never hidden), within the bound of reference/ERROR_BOUND.md.
//
// Paths: query rows of one KV head are processed in blocks that share each K/V load (the GQA
// heads and a run of query positions); when there are few query rows (decode, Sq = 1) the key
// range is split across threads and the partial (m, l, acc) states are merged exactly as in a
// two-pass kernel. The Highway path (dynamic dispatch) and the scalar path compute the same
// thing; FlashPath selects one for testing. Within the Highway path, blocks of few rows over
// many keys (decode, short causal blocks) send the runs of keys that all their rows may see
// (a mask's values finite there) to a dense decode kernel, and everything else to the general
// tile kernel; with K transposed once per call (prefill) and default key positions, that
// runs register-blocked groups of six rows. Both apply a softcap, ALiBi and a mask with
// unit stride along the keys in vectors; other masks, and in prefill position tables that
// are not consecutive, take the general kernel's per-key path.
// Blocks are handed to threads costliest first; without key splits each block's task also
// writes its output rows.
//
// Determinism: for a fixed thread count and split count, results are bitwise repeatable.
// The split count (and so the rounding) depends on num_threads unless kv_splits is given.
#ifndef KVCHECK_SRC_ATTENTION_FLASH_ATTENTION_H_
#define KVCHECK_SRC_ATTENTION_FLASH_ATTENTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

enum class FlashPath { kAuto, kScalar, kSimd };

struct FlashOptions {
  int num_threads = 1;  // 1..kMaxSharedPoolThreads (src/base/thread_pool.h)
  // Key-range splits per block of query rows: 0 picks one per thread for long rows with few
  // query rows (decode), 1 disables splitting.
  int kv_splits = 0;
  FlashPath path = FlashPath::kAuto;
  // Keys per tile of the dense decode kernel (one score pass, one online-softmax update, one
  // value pass): 0 picks up to kMaxDecodeTileKeys by the rows' size; 1..kMaxDecodeTileKeys
  // fixes it (the laws draw it, so that short rows cross tiles too).
  int decode_tile_keys = 0;
};
inline constexpr int kMaxDecodeTileKeys = 4096;

// Errors: those of ValidateAttention; kInvalidArgument for num_threads outside
// [1, kMaxSharedPoolThreads], a negative kv_splits or decode_tile_keys outside
// [0, kMaxDecodeTileKeys]; kResourceExhausted if the output does not fit.
absl::StatusOr<Tensor> FlashAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params,
                                      const FlashOptions& options = {});

// Fused decode (or prefill) over an interleaved cache buffer `interleaved` (B, L, KH, 2D):
// [b][pos][kv_head][K(D) | V(D)], as InterleavedCache::InterleavedView() returns it. K and V
// of a position are read from one stream. Errors: as FlashAttention, and kInvalidArgument if
// `interleaved` is not rank 4 with an even last dimension.
absl::StatusOr<Tensor> FlashAttentionInterleaved(const Tensor& q, const Tensor& interleaved,
                                                 const AttentionParams& params,
                                                 const FlashOptions& options = {});

// The SIMD targets compiled into the kernel that this CPU supports ("AVX2", "SSE4", ...),
// and a way to pin dispatch to one of them (for tests: every target must pass). Pinning
// affects every Highway kernel in the process; PinSimdTarget("") unpins.
std::vector<std::string> SupportedSimdTargets();
// Returns false if `name` is not one of SupportedSimdTargets().
bool PinSimdTarget(const std::string& name);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_ATTENTION_FLASH_ATTENTION_H_
