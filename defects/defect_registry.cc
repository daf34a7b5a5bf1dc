#include "defects/defect_registry.h"

#include "defects/candle_prealloc_cache.h"
#include "defects/candle_ring_cache.h"
#include "defects/candle_scattered_cache.h"
#include "defects/defective_attention.h"
#include "defects/defective_generator.h"
#include "defects/defective_metal.h"
#include "defects/defective_paged_cache.h"
#include "defects/raw_interleaved_cache.h"

namespace kvcheck::defects {
namespace {

template <PreallocDefect kDefect>
absl::StatusOr<std::unique_ptr<KvCache>> MakePrealloc(const CacheConfig& config) {
  return CandlePreallocCache::Create(kDefect, config);
}

template <RingDefect kDefect>
absl::StatusOr<std::unique_ptr<KvCache>> MakeRing(const CacheConfig& config) {
  return CandleRingCache::Create(kDefect, config);
}

template <PagedDefect kDefect>
absl::StatusOr<std::unique_ptr<KvCache>> MakePaged(const CacheConfig& config) {
  return DefectivePagedCache::Create(kDefect, config);
}

template <AttentionDefect kDefect>
absl::StatusOr<Tensor> Kernel(const Tensor& q, const Tensor& k, const Tensor& v,
                              const AttentionParams& params) {
  return DefectiveAttention(kDefect, q, k, v, params);
}

template <MetalDefect kDefect>
absl::StatusOr<Tensor> MetalKernel(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const AttentionParams& params) {
  return DefectiveMetalAttention(kDefect, q, k, v, params);
}

template <DecoderDefect kDefect>
absl::StatusOr<std::unique_ptr<model::Generator>> MakeGenerator(const model::Decoder* decoder,
                                                                model::GenerationOptions options) {
  return CreateDefectiveGenerator(kDefect, decoder, std::move(options));
}

const CacheStrategy kNoStrategy{"", "", {}, false, false, false, nullptr};

// {name, summary, default config, windowed, amortized growth, per-row, factory}
CacheStrategy Prealloc(const char* name, const char* summary,
                       absl::StatusOr<std::unique_ptr<KvCache>> (*create)(const CacheConfig&)) {
  return CacheStrategy{name, summary, {4, 0}, false, true, false, create};
}

const Defect kDefects[] = {
    {"prealloc_clone_shares_buffer",
     "candle 0.11 KvCache clone ('c2 read again'); candle kv_cache.rs Cache derives Clone",
     "Fork copies the buffer handle: both caches write the same storage at their own lengths, "
     "so an append to one overwrites rows the other shows.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     Prealloc("prealloc_clone_shares_buffer", "clone shares the buffer",
              &MakePrealloc<PreallocDefect::kCloneSharesBuffer>),
     nullptr, nullptr},
    {"prealloc_rejects_noncontiguous_prefill",
     "candle 0.11 ('slice-set only supports contiguous tensors'); candle Cache::append",
     "The write requires a contiguous source: a (B, S, KH, D).transpose(1, 2) prefill fails, a "
     "single-token decode (size-1 dims are exempt from contiguity) passes.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     Prealloc("prealloc_rejects_noncontiguous_prefill", "slice_set needs contiguous input",
              &MakePrealloc<PreallocDefect::kRejectsNonContiguousPrefill>),
     nullptr, nullptr},
    {"prealloc_grows_only_once",
     "candle before PR #3035 (growth `if` instead of `while`); KvCache::new(2, 4) worked example",
     "An append that needs more than one growth step grows once, then fails (capacity 4, "
     "append 10: grows to 8, then the write fails).",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     Prealloc("prealloc_grows_only_once", "grows by one step only",
              &MakePrealloc<PreallocDefect::kGrowsOnlyOnce>),
     nullptr, nullptr},
    {"prealloc_zero_capacity_loop",
     "candle KvCache::new(dim, 0): grow_by = 0, `while cur + n > max` never ends",
     "Capacity 0 grows by 0 forever; the model cuts the loop after a step budget and reports it "
     "as an error instead of hanging.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     Prealloc("prealloc_zero_capacity_loop", "capacity 0 never grows",
              &MakePrealloc<PreallocDefect::kZeroCapacityNeverTerminates>),
     nullptr, nullptr},
    {"prealloc_linear_growth",
     "candle Cache::grow_by (fixed at the initial capacity)",
     "Growth by a fixed step: contents are right, but each growth copies the whole buffer, so "
     "copying is quadratic in the sequence length.",
     DefectKind::kCache, Killer::kGrowthLaw, DType::kF32,
     Prealloc("prealloc_linear_growth", "linear growth", &MakePrealloc<PreallocDefect::kLinearGrowth>),
     nullptr, nullptr},
    {"prealloc_reset_keeps_stale_rows",
     "candle Cache::reset keeps max_seq_len; RawInterleavedKvCache::reset keeps the data",
     "Reset rewinds the length but keeps the buffer and the old view length: rows of the "
     "previous sequence stay visible after the reset.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     Prealloc("prealloc_reset_keeps_stale_rows", "stale rows after reset",
              &MakePrealloc<PreallocDefect::kResetKeepsStaleRows>),
     nullptr, nullptr},
    {"prealloc_k_then_v_fails",
     "candle KvCache::append (k_cache.append(k)?; v_cache.append(v)?, no rollback)",
     "K is appended, then the V append fails (a non-contiguous V): K has advanced and V has "
     "not, and every later view is out of step.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     Prealloc("prealloc_k_then_v_fails", "K and V out of step",
              &MakePrealloc<PreallocDefect::kHalvesOutOfStep>),
     nullptr, nullptr},
    {"interleaved_zero_capacity_oob",
     "candle 0.11 (RawInterleavedKvCache::new(3, 64, 0) panics: range end index 64 out of range)",
     "The buffer doubles when full; 0 doubles to 0 and the position is written past the end of "
     "the allocation: an out-of-bounds heap write in C++ (the case's child process crashes, or "
     "reports capacity 0 for a non-empty cache; //defects:oob_defect_asan_test shows the "
     "AddressSanitizer report).",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     CacheStrategy{"interleaved_zero_capacity_oob", "0 doubles to 0", {0, 0}, false, true, false,
                   &RawInterleavedCache::Create},
     nullptr, nullptr},
    {"ring_positions_wrong_at_n_eq_w",
     "candle RotatingCache::positions(n) for n == M with offset != 0 (kv_cache.rs)",
     "An append of S >= W writes the last W tokens in time order and resets the offset, but the "
     "slot positions come from the rotated formula with the old offset.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     CacheStrategy{"ring_positions_wrong_at_n_eq_w", "positions rotated for a full chunk", {0, 8},
                   true, true, false, &MakeRing<RingDefect::kPositionsRotatedForFullChunk>},
     nullptr, nullptr},
    {"ring_chunk_returns_chunk_only",
     "candle RotatingCache::append for n >= M returns src; attn_mask(n >= M) allows M + 1 keys",
     "An append of S >= W returns the chunk (S tokens) instead of the W visible ones: history "
     "is dropped and a query sees more than W keys.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     CacheStrategy{"ring_chunk_returns_chunk_only", "returns the whole chunk", {0, 8}, true, true,
                   false, &MakeRing<RingDefect::kChunkReturnsChunkOnly>},
     nullptr, nullptr},
    {"scattered_long_prompt_skips_write",
     "candle ScatteredKvCache::append with context <= T (kv_cache.rs)",
     "A prompt of S >= context advances the row's positions without writing the cache; the next "
     "decode attends to zero or stale slots.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     CacheStrategy{"scattered_long_prompt_skips_write", "long prompt not written", {0, 8}, true,
                   true, true, &CandleScatteredCache::Create},
     nullptr, nullptr},
    {"paged_block_boundary_off_by_one",
     "a classic block-table mistake: blocks for n tokens counted as n / block_size",
     "The partial last block is never allocated: the first token past a block boundary has no "
     "block, and the cache's own table-bounds check aborts the process.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     CacheStrategy{"paged_block_boundary_off_by_one", "partial block not allocated", {0, 0}, false,
                   true, true, &MakePaged<PagedDefect::kBlockBoundaryOffByOne>},
     nullptr, nullptr},
    {"paged_shared_block_written_in_place",
     "copy-on-write forgotten for the partial block shared after a fork (beam search, prefix "
     "sharing)",
     "After Fork both caches write the shared partial last block: each overwrites the other's "
     "newest tokens.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     CacheStrategy{"paged_shared_block_written_in_place", "no copy-on-write per block", {0, 0},
                   false, true, true, &MakePaged<PagedDefect::kSharedBlockWrittenInPlace>},
     nullptr, nullptr},
    {"paged_reset_keeps_block_table", "reset clears the lengths but not the block table",
     "After Reset the cache still holds (and reports capacity for) every old block; with the "
     "same shape the contents even look right, since positions restart at 0.",
     DefectKind::kCache, Killer::kCacheStateMachine, DType::kF32,
     CacheStrategy{"paged_reset_keeps_block_table", "reset keeps the block table", {0, 0}, false,
                   true, true, &MakePaged<PagedDefect::kResetKeepsBlockTable>},
     nullptr, nullptr},
    {"attention_no_rescale", "online softmax (candle online_softmax_step, written wrong)",
     "When the running max grows, the accumulator is not scaled by exp(m_old - m_new).",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kNoRescaleOnNewMax>, nullptr},
    {"attention_half_precision_dot",
     "candle causal_decode_generic (cpu_flash/causal.rs): T::vec_dot rounds the f32 sum to "
     "f16/bf16",
     "The dot product is rounded to the input's half precision before scaling.",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kBF16, kNoStrategy,
     &Kernel<AttentionDefect::kHalfPrecisionDot>, nullptr},
    {"attention_gqa_modulo", "a classic GQA mapping mistake",
     "Query head h reads KV head h % KH instead of h / (H / KH).",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kGqaModulo>, nullptr},
    {"attention_causal_top_left", "candle AttnMask::causal() = kv_offset 0 (cpu_flash/causal.rs)",
     "Causal alignment top-left: query i sits at position i instead of Skv - Sq + i, so new "
     "tokens do not see the cached history.",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kCausalTopLeft>, nullptr},
    {"attention_softcap_decode_bias",
     "candle causal_decode_f32 (cpu_flash/causal.rs): ALiBi slope not guarded by max_bias > 0",
     "With softcap on and ALiBi off, decode adds a spurious (kpos - qpos) bias to every score.",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kSoftcapDecodeBias>, nullptr},
    {"attention_masked_row_nan", "softmax over all -inf (candle flash_attn_varlen_unfused)",
     "A row with no allowed key comes out NaN (0 / 0) instead of 0.",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kMaskedRowNaN>, nullptr},
    {"attention_coarse_accumulator",
     "a precision regression: partial sums kept in a narrower format than f32 (reduced-precision "
     "accumulators, a bf16 or TF32 path leaking into the reduction)",
     "The softmax sum and the output accumulator keep 20 significant bits instead of 24: the "
     "results usually stay within the derived bound, but their errors are about 16x those of "
     "a straightforward f32 attention.",
     DefectKind::kAttention, Killer::kPrecisionEnvelope, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kCoarseAccumulator>, nullptr},
    {"attention_finite_initial_max",
     "candle 0.11 sdpa_vector_2pass (initial max -1e9, finite); masks built with a "
     "finite minus infinity",
     "The running max starts at -1e9: when every allowed score is more than ~87 below -1e9 "
     "(a row masked with -1e9, as models build masks, plus any score below -87) every weight "
     "underflows against it and the row is 0 / 0 = NaN.",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kFiniteInitialMax>, nullptr},
    {"attention_empty_split_poisons_merge",
     "flash-decoding merge of per-split normalised partials without a guard for an empty split",
     "Keys are split in three ranges, each normalised on its own (O_i = acc_i / l_i) and merged "
     "by log-sum-exp weights; a range in which a row sees no key gives O_i = 0 / 0 = NaN, and "
     "its zero weight does not cancel it (0 * NaN = NaN): rows whose keys lie in one range only "
     "(windows, causal rows, masks) come out NaN.",
     DefectKind::kAttention, Killer::kKernelLaws, DType::kF32, kNoStrategy,
     &Kernel<AttentionDefect::kEmptySplitPoisonsMerge>, nullptr},
    {"metal_vector_ignores_mask_and_causal",
     "candle 0.11 Metal sdpa (ops.rs): the vector path ignores mask and do_causal",
     "The .metal vector kernel built without its causal and mask checks: a decode row sees "
     "keys after its position and keys the mask removes.",
     DefectKind::kAttention, Killer::kMetalKernelLaws, DType::kF32, kNoStrategy,
     &MetalKernel<MetalDefect::kVectorIgnoresMaskAndCausal>, nullptr},
    {"metal_tiled_unclamped_causal_limit",
     "candle 0.11 steel attention: kb_lim = ceil(((x+1)*BQ + Lk - Lq) / BK), not "
     "clamped to NK (MLX #1999)",
     "With Sq not a multiple of the 32-row tile, the causal key-block limit runs past the key "
     "blocks and loads K and V rows past Skv unchecked: an out-of-bounds read of the last "
     "head's buffer (the emulator's error), or another head's values at weight 0 (NaN when "
     "they are not finite).",
     DefectKind::kAttention, Killer::kMetalKernelLaws, DType::kF32, kNoStrategy,
     &MetalKernel<MetalDefect::kUnclampedCausalLimit>, nullptr},
    {"metal_tiled_masked_row_nan",
     "candle 0.11 steel attention (candle issue #3388): O /= sum with no zero guard",
     "A query row with no allowed key (mask, window, empty slot) comes out 0 / 0 = NaN "
     "instead of 0.",
     DefectKind::kAttention, Killer::kMetalKernelLaws, DType::kF32, kNoStrategy,
     &MetalKernel<MetalDefect::kMaskedRowNaN>, nullptr},
    {"metal_tiled_f32_threadgroup_budget",
     "candle 0.11 steel attention: Q tile + K/V tile in threadgroup memory, f32 "
     "D = 256 needs 53,760 bytes, not checked against the 32 KiB limit",
     "The tiled kernel stages the Q tile (32 x (D + 4) elements) in threadgroup memory beside "
     "its K/V tile; the host sets its length and never checks the total: f32 with a head dim "
     "above ~100 asks for more than 32 KiB, which Apple GPUs refuse (the emulator's error).",
     DefectKind::kAttention, Killer::kMetalKernelLaws, DType::kF32, kNoStrategy,
     &MetalKernel<MetalDefect::kQTileOverBudget>, nullptr},
    {"metal_vector_for_short_prefill",
     "candle before PR #3479 (2026-06-18): Lq <= 8 took the vector kernel, which writes one "
     "query row",
     "Prefill calls of 2..8 query rows go to the vector kernel with a grid of one row: rows "
     "1..Sq-1 are never written (zeros here, garbage on a GPU).",
     DefectKind::kAttention, Killer::kMetalKernelLaws, DType::kF32, kNoStrategy,
     &MetalKernel<MetalDefect::kVectorForShortPrefill>, nullptr},
    {"metal_element_offsets",
     "candle before PR #3599: q/k/v buffer offsets passed in elements instead of bytes",
     "A view that starts inside its buffer (a narrowed cache, a batch row, a transposed "
     "slice) is bound at offset/4 (f32) or offset/2 bytes: the kernel reads the wrong rows.",
     DefectKind::kAttention, Killer::kMetalKernelLaws, DType::kF32, kNoStrategy,
     &MetalKernel<MetalDefect::kElementOffsets>, nullptr},
    {"metal_2pass_finite_initial_max",
     "candle 0.11 sdpa_vector_2pass: running max starts at -1e9",
     "The .metal 2-pass kernel built with a finite initial max: when every allowed score of a "
     "row lies far below -1e9 (a mask built with a huge finite minus infinity) every weight "
     "underflows against it and the row comes out 0 instead of the softmax over those keys.",
     DefectKind::kAttention, Killer::kMetalKernelLaws, DType::kF32, kNoStrategy,
     &MetalKernel<MetalDefect::kFiniteInitialMax>, nullptr},
    {"decoder_mask_from_zero",
     "Build a Large Language Model (From Scratch), KV-cache chapter exercise: mask sliced from 0, "
     "not the position pointer",
     "The causal mask of a chunk starts at row 0 instead of the position pointer: in the cached "
     "path the queries sit at positions 0.. while their keys sit at the pointer, so a decoded "
     "token attends to the first key only.",
     DefectKind::kDecoder, Killer::kGenerationLaws, DType::kF32, kNoStrategy, nullptr,
     &MakeGenerator<DecoderDefect::kMaskFromZero>},
    {"decoder_no_reset_between_generations",
     "Build a Large Language Model (From Scratch), KV-cache chapter exercise: reset_kv_cache not "
     "called",
     "Generate does not reset the caches and the position pointer: a second generation attends "
     "to the tokens of the first.",
     DefectKind::kDecoder, Killer::kGenerationLaws, DType::kF32, kNoStrategy, nullptr,
     &MakeGenerator<DecoderDefect::kNoResetBetweenGenerations>},
    {"decoder_positions_restart_at_zero",
     "Build a Large Language Model (From Scratch), KV-cache chapter: position ids from 0 when "
     "cached, not from current_pos",
     "In the cached path each fed chunk gets position ids 0.. (position embeddings, RoPE) "
     "instead of pointer.., while the mask uses the pointer.",
     DefectKind::kDecoder, Killer::kGenerationLaws, DType::kF32, kNoStrategy, nullptr,
     &MakeGenerator<DecoderDefect::kPositionsRestartAtZero>},
};

}  // namespace

absl::Span<const Defect> Defects() { return kDefects; }

const Defect* FindDefect(const std::string& name) {
  for (const Defect& defect : kDefects) {
    if (name == defect.name) return &defect;
  }
  return nullptr;
}

const char* KillerName(Killer killer) {
  switch (killer) {
    case Killer::kCacheStateMachine:
      return "cache state machine";
    case Killer::kGrowthLaw:
      return "growth law";
    case Killer::kKernelLaws:
      return "kernel laws";
    case Killer::kPrecisionEnvelope:
      return "precision envelope";
    case Killer::kMetalKernelLaws:
      return "Metal kernel laws";
    case Killer::kGenerationLaws:
      return "generation laws";
    case Killer::kPending:
      return "pending";
  }
  return "?";
}

}  // namespace kvcheck::defects
