#include "src/attention/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hwy/targets.h"
#include "src/attention/flash_problem.h"
#include "src/attention/key_rules.h"
#include "src/attention/transpose_keys.h"
#include "src/base/poison_unused.h"
#include "src/base/status_macros.h"
#include "src/base/thread_pool.h"
#include "src/cache/interleaved_cache.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck {
namespace {

using flash_internal::FlashProblem;
using flash_internal::kMaxBlockRows;
using flash_internal::Operand;
using flash_internal::RowBlock;
using flash_internal::RowState;

Operand MakeOperand(const Tensor& t) {
  Operand operand;
  operand.dtype = t.dtype();
  operand.base = t.storage() == nullptr
                     ? nullptr
                     : t.storage()->bytes() + t.layout().offset() * DTypeSize(t.dtype());
  for (int d = 0; d < 4; ++d) operand.stride[d] = t.strides()[d];
  return operand;
}

// Blocks of query rows sharing a KV head: the group's heads for a run of query positions
// (so one K/V load serves them all), each over the keys any of its rows may see.
std::vector<RowBlock> PlanBlocks(const FlashProblem& p) {
  const AttentionShape& s = p.shape;
  const int64_t group = s.group_size();
  const int64_t heads_per_block = std::min<int64_t>(group, kMaxBlockRows);
  const int64_t queries_per_block = std::max<int64_t>(1, kMaxBlockRows / heads_per_block);
  // With default key positions, causal and window rules cut the key range (a mask can only
  // remove more keys).
  const bool trim = p.kv_positions == nullptr;
  std::vector<RowBlock> blocks;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t kv_head = 0; kv_head < s.num_kv_heads; ++kv_head) {
      for (int64_t h0 = 0; h0 < group; h0 += heads_per_block) {
        const int64_t heads = std::min(heads_per_block, group - h0);
        for (int64_t i0 = 0; i0 < s.q_len; i0 += queries_per_block) {
          RowBlock block;
          block.batch = b;
          block.kv_head = kv_head;
          const int64_t queries = std::min(queries_per_block, s.q_len - i0);
          int64_t lo = s.kv_len, hi = 0;
          for (int64_t i = i0; i < i0 + queries; ++i) {
            const int64_t qpos = p.QueryPosition(b, i);
            for (int64_t h = h0; h < h0 + heads; ++h) {
              block.head[block.num_rows] = kv_head * group + h;
              block.query[block.num_rows] = i;
              ++block.num_rows;
            }
            int64_t row_lo = 0, row_hi = s.kv_len;
            if (trim && p.causal) row_hi = std::clamp<int64_t>(qpos + 1, 0, s.kv_len);
            if (trim && p.window > 0) row_lo = std::clamp<int64_t>(qpos - p.window + 1, 0, s.kv_len);
            if (trim && qpos < 0) row_lo = row_hi = 0;
            if (row_lo < row_hi) {
              lo = std::min(lo, row_lo);
              hi = std::max(hi, row_hi);
            }
          }
          // Tiles start at multiples of the tile size (keys before `lo` in the first tile are
          // masked like any other): the pre-transposed K is read a whole tile at a time.
          block.key_begin = lo < hi ? lo / flash_internal::kFlashTile * flash_internal::kFlashTile : 0;
          block.key_end = lo < hi ? hi : 0;
          blocks.push_back(block);
        }
      }
    }
  }
  return blocks;
}

// Positions enter every rule only through kpos - qpos and their signs (key_rules.h: a
// negative position is an empty slot; causal, window and ALiBi read the difference). So when
// each batch row's keys sit at consecutive positions o_b + j, o_b >= 0 (a cache that has not
// wrapped, a prompt starting at o_b), the problem is the same with the keys at the default
// positions j and the queries at qpos - o_b, as long as no query changes sign (every
// non-negative qpos >= o_b). The kernels' fast paths take default key positions: cut block
// ranges, the prefill groups, one dense decode run, exact ALiBi distances. Returns whether
// that holds, with the queries' shifted positions ((B, Sq) row-major) in `shifted`.
bool ShiftKeysToDefaultPositions(const FlashProblem& p, std::vector<int64_t>& shifted) {
  const AttentionShape& s = p.shape;
  if (p.kv_positions == nullptr || s.kv_len == 0) return false;
  shifted.resize(s.batch * s.q_len);
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t* keys = p.kv_positions + b * s.kv_len;
    const int64_t offset = keys[0];
    if (offset < 0 || offset > std::numeric_limits<int64_t>::max() - s.kv_len) return false;
    for (int64_t j = 1; j < s.kv_len; ++j) {
      if (keys[j] != offset + j) return false;
    }
    for (int64_t i = 0; i < s.q_len; ++i) {
      const int64_t qpos = p.QueryPosition(b, i);
      if (qpos >= 0 && qpos < offset) return false;
      shifted[b * s.q_len + i] = qpos < 0 ? qpos : qpos - offset;
    }
  }
  return true;
}

static_assert(kMaxDecodeTileKeys == flash_internal::kMaxDecodeTile);

absl::StatusOr<Tensor> Run(const Tensor& q, const Tensor& k, const Tensor& v,
                           const AttentionParams& params, const FlashOptions& options) {
  KV_ASSIGN_OR_RETURN(const AttentionShape shape, ValidateAttention(q, k, v, params));
  if (options.num_threads < 1 || options.num_threads > kMaxSharedPoolThreads ||
      options.kv_splits < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flash attention: num_threads ", options.num_threads, " must be in [1, ",
        kMaxSharedPoolThreads, "] and kv_splits ", options.kv_splits, " >= 0"));
  }
  if (options.decode_tile_keys < 0 || options.decode_tile_keys > kMaxDecodeTileKeys) {
    return absl::InvalidArgumentError(
        absl::StrCat("flash attention: decode_tile_keys ", options.decode_tile_keys,
                     " must be in [0, ", kMaxDecodeTileKeys, "] (0: automatic)"));
  }
  if (shape.no_output_rows()) {
    return Tensor::Zeros(q.dtype(), {shape.batch, shape.num_heads, shape.q_len, shape.head_dim});
  }
  FlashProblem p;
  p.shape = shape;
  p.decode_tile_keys = options.decode_tile_keys;
  p.q = MakeOperand(q);
  p.k = MakeOperand(k);
  p.v = MakeOperand(v);
  p.scale = params.scale.value_or(attention_internal::DefaultScale(shape.head_dim));
  p.softcap = params.softcap;
  p.inverse_softcap = params.softcap > 0 ? 1.0f / params.softcap : 0.0f;
  p.alibi_slopes = params.alibi_slopes.empty() ? nullptr : params.alibi_slopes.data();
  p.causal = params.causal;
  p.window = params.window;
  p.q_positions = params.q_positions.empty() ? nullptr : params.q_positions.data();
  p.kv_positions = params.kv_positions.empty() ? nullptr : params.kv_positions.data();
  std::vector<int64_t> shifted_q_positions;
  if (ShiftKeysToDefaultPositions(p, shifted_q_positions)) {
    p.kv_positions = nullptr;
    p.q_positions = shifted_q_positions.data();
  }
  Tensor mask;
  if (params.mask.has_value()) {
    mask = *params.mask;  // f32 by validation; read in place through its strides
    p.mask = mask.data<float>();
    for (int d = 0; d < 4; ++d) p.mask_stride[d] = mask.dim(d) == 1 ? 0 : mask.strides()[d];
  }
  // Every row is written by FinalizeRow (the blocks cover every (b, head, query)), so the
  // output is not zeroed first: a serial pass over it that cost 2-3% of a two-thread prefill.
  KV_ASSIGN_OR_RETURN(Tensor out,
                      Tensor::Uninitialized(DType::kF32, {shape.batch, shape.num_heads,
                                                          shape.q_len, shape.head_dim}));
  const std::vector<RowBlock> blocks = PlanBlocks(p);
  // Prefill (many query rows per KV head): transpose K once per (b, kv_head), in parallel, for
  // the SIMD path's broadcast-multiply-add score kernel. Not for few rows over many more keys
  // (decode, and short causal blocks such as speculative decoding's): the transpose is a
  // strided pass over all of K per call, several times what the dense decode kernel
  // (flash_decode_simd.cc) spends on up to kMaxBlockRows rows reading K row by row
  // (measured: Sq 4, 9 heads on 3, Skv 4096: 5.0 ms transposed, 0.7 ms dense).
  std::unique_ptr<float[]> k_transposed;
  const bool simd = options.path != FlashPath::kScalar;
  const int64_t rows_per_kv_head = shape.group_size() * shape.q_len;
  const bool decode_like = rows_per_kv_head < 8 || (rows_per_kv_head <= kMaxBlockRows &&
                                                    shape.kv_len >= 4 * shape.q_len);
  if (simd && !decode_like && shape.kv_len > 0) {
    const int64_t padded_dim = flash_internal::PaddedDim(shape.head_dim);
    // Rows of Kt: Skv rounded up to tiles (the kernels read whole tiles from a tile's start,
    // never past the tile holding key Skv - 1; zero past Skv) and a cache line: a tile of Kt
    // is 2 or 4 lines of each of D rows, and with a power-of-two row stride (Skv = 512:
    // 2 KiB) they would all fall into a few L1 sets and evict one another; shifted by a line
    // per row, they spread over all of them.
    p.kt_stride = (shape.kv_len + flash_internal::kFlashTile - 1) / flash_internal::kFlashTile *
                      flash_internal::kFlashTile +
                  16;
    const int64_t per_head = padded_dim * p.kt_stride;
    // On a cache line (the vector loads of a tile's row would otherwise straddle two). Not
    // zeroed here, serially: each (b, kv_head)'s last task zeroes its padding (keys past Skv,
    // rows past D), and the others write every other element.
    k_transposed.reset(new float[shape.batch * shape.num_kv_heads * per_head + 16]);
    const size_t misalignment = reinterpret_cast<uintptr_t>(k_transposed.get()) % 64;
    float* kt_base = k_transposed.get() + (misalignment == 0 ? 0 : (64 - misalignment) / 4);
    if (kPoisonUnused) {  // the test build: an element nobody wrote reads as NaN
      std::fill(kt_base, kt_base + shape.batch * shape.num_kv_heads * per_head,
                std::numeric_limits<float>::quiet_NaN());
    }
    // Tasks of kChunk keys of one (b, kv_head), so that a few KV heads spread evenly over
    // the threads.
    constexpr int64_t kChunk = 128;
    const int64_t chunks = (shape.kv_len + kChunk - 1) / kChunk;
    SharedThreadPool(options.num_threads)
        .ParallelFor(shape.batch * shape.num_kv_heads * chunks, [&](int64_t task) {
          const int64_t bk = task / chunks, chunk = task % chunks;
          const int64_t b = bk / shape.num_kv_heads, kv_head = bk % shape.num_kv_heads;
          float* out = kt_base + bk * per_head;
          // Runs of kKeys keys: each row of Kt takes a run of consecutive stores (a cache
          // line) per run, not a store per key kt_stride floats from the last one
          // (transpose_keys.h). f32 rows with unit stride are read in place.
          constexpr int64_t kKeys = flash_internal::kMaxRunKeys;
          std::vector<float> widened;  // rows that cannot be read in place
          const float* rows[kKeys];
          const int64_t chunk_end = std::min(shape.kv_len, (chunk + 1) * kChunk);
          if (chunk == chunks - 1) {
            for (int64_t d = 0; d < padded_dim; ++d) {
              float* row = out + d * p.kt_stride;
              std::fill(row + (d < shape.head_dim ? shape.kv_len : 0), row + p.kt_stride, 0.0f);
            }
          }
          for (int64_t j0 = chunk * kChunk; j0 < chunk_end; j0 += kKeys) {
            const int64_t n = std::min(kKeys, chunk_end - j0);
            for (int64_t t = 0; t < n; ++t) {
              rows[t] = p.k.F32Row(b, kv_head, j0 + t);
              if (rows[t] == nullptr) {
                widened.resize(kKeys * shape.head_dim);
                float* row = widened.data() + t * shape.head_dim;
                p.k.ReadRow(b, kv_head, j0 + t, shape.head_dim, row);
                rows[t] = row;
              }
            }
            flash_internal::TransposeKeys(rows, n, shape.head_dim, out + j0, p.kt_stride);
          }
        });
    p.k_transposed = kt_base;
  }
  // Split long key ranges of few blocks (decode) so that every thread has work.
  int splits = options.kv_splits;
  if (splits == 0) {
    const bool few_blocks = static_cast<int64_t>(blocks.size()) < 2 * options.num_threads;
    splits = few_blocks && shape.kv_len >= 512 ? options.num_threads : 1;
  }
  const int64_t padded = flash_internal::PaddedDim(shape.head_dim);
  // Threads claim tasks in order: KV head after KV head (the threads share one head's K and
  // V while they fit in their caches), and within one the costliest blocks (most rows x keys;
  // causal prefill's last query rows) first, so that the last tasks are the cheapest and no
  // thread is left alone with a long one. Each task is computed by one thread whatever the
  // order, so the results do not depend on it.
  std::vector<int64_t> order(blocks.size());
  for (size_t blk = 0; blk < blocks.size(); ++blk) order[blk] = static_cast<int64_t>(blk);
  if (options.num_threads > 1) {
    auto key = [&](int64_t i) {
      const RowBlock& block = blocks[i];
      return std::make_tuple(block.batch, block.kv_head,
                             -block.num_rows * (block.key_end - block.key_begin));
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return key(x) < key(y); });
  }
  auto process = [&](const RowBlock& block, RowState* row_states) {
    if (simd) {
      flash_internal::ProcessBlockSimd(p, block, row_states);
    } else {
      flash_internal::ProcessBlockScalar(p, block, row_states);
    }
  };
  float* out_data = out.data<float>();
  auto finalize = [&](const RowBlock& block, const RowState* row_states) {
    for (int r = 0; r < block.num_rows; ++r) {
      float* row = out_data + ((block.batch * shape.num_heads + block.head[r]) * shape.q_len +
                               block.query[r]) * shape.head_dim;
      flash_internal::FinalizeRow(row_states[r], shape.head_dim, row);
    }
  };
  if (splits == 1) {
    // A task per block, which normalises its own rows into the output: its states live in
    // the thread's scratch for the task only (no per-call arrays for every row of the
    // problem), and the normalisation runs on all threads.
    SharedThreadPool(options.num_threads)
        .ParallelFor(static_cast<int64_t>(blocks.size()), [&](int64_t task) {
          const RowBlock& block = blocks[order[task]];
          thread_local std::vector<float> accumulators;
          thread_local std::vector<RowState> row_states;
          accumulators.assign(block.num_rows * padded, 0.0f);
          row_states.assign(block.num_rows, RowState());
          for (int r = 0; r < block.num_rows; ++r) row_states[r].acc = &accumulators[r * padded];
          // No request for the block's output rows ahead: it paid while FinalizeRow stored a
          // float at a time (4.4% of a 512 x 512 prefill in its stores), but with its vector
          // stores the burst of requests (four lines for each of 48 rows) cost more than the
          // stores waited: without it, 512 x 512 causal on a Zen 4 VM (five alternating pinned
          // rounds) took 3.84-4.06 ms against 3.93-4.10 on one thread, 1.86-1.99 against
          // 1.82-2.16 on two, and the block tasks' set-up and FinalizeRow together fell from
          // 4.3% to 3.8% of the tile kernel's samples.
          process(block, row_states.data());
          finalize(block, row_states.data());
        });
    if (q.dtype() == DType::kF32) return out;
    return Cast(out, q.dtype());
  }
  const int64_t tasks = static_cast<int64_t>(blocks.size()) * splits;
  // One state per row of each task, the splits of a block side by side: block `blk`'s split
  // `s` starts at (first_row[blk] * splits + s * num_rows). Sized by the rows the blocks have
  // (3 per block for GQA decode), not kMaxBlockRows: decode calls are short enough for the
  // zeroing of unused accumulators to show.
  std::vector<int64_t> first_row(blocks.size() + 1, 0);
  for (size_t blk = 0; blk < blocks.size(); ++blk) {
    first_row[blk + 1] = first_row[blk] + blocks[blk].num_rows;
  }
  const int64_t num_states = first_row.back() * splits;
  std::vector<float> accumulators(num_states * padded, 0.0f);
  std::vector<RowState> states(num_states);
  for (int64_t i = 0; i < num_states; ++i) states[i].acc = &accumulators[i * padded];
  auto task_states = [&](int64_t blk, int64_t split) {
    return &states[first_row[blk] * splits + split * blocks[blk].num_rows];
  };
  SharedThreadPool(options.num_threads).ParallelFor(tasks, [&](int64_t task) {
    const int64_t blk = order[task / splits];
    RowBlock block = blocks[blk];
    const int64_t split = task % splits;
    // Split boundaries on tile multiples too (see PlanBlocks).
    const int64_t tiles = (block.key_end - block.key_begin + flash_internal::kFlashTile - 1) /
                          flash_internal::kFlashTile;
    const int64_t begin =
        block.key_begin + tiles * split / splits * flash_internal::kFlashTile;
    block.key_end = std::min(
        block.key_end, block.key_begin + tiles * (split + 1) / splits * flash_internal::kFlashTile);
    block.key_begin = std::min(begin, block.key_end);
    process(block, task_states(blk, split));
  });
  // Merge the splits of each block in a fixed order, then normalise into the output.
  for (size_t blk = 0; blk < blocks.size(); ++blk) {
    const RowBlock& block = blocks[blk];
    RowState* first = task_states(blk, 0);
    for (int split = 1; split < splits; ++split) {
      RowState* other = task_states(blk, split);
      for (int r = 0; r < block.num_rows; ++r) {
        flash_internal::MergeRowState(first[r], other[r], shape.head_dim);
      }
    }
    finalize(block, first);
  }
  if (q.dtype() == DType::kF32) return out;
  return Cast(out, q.dtype());
}

}  // namespace

absl::StatusOr<Tensor> FlashAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params,
                                      const FlashOptions& options) {
  return Run(q, k, v, params, options);
}

absl::StatusOr<Tensor> FlashAttentionInterleaved(const Tensor& q, const Tensor& interleaved,
                                                 const AttentionParams& params,
                                                 const FlashOptions& options) {
  if (interleaved.rank() != 4 || interleaved.dim(3) % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flash attention (interleaved): buffer must be (B, L, KH, 2D); got ",
        DimsToString(interleaved.shape())));
  }
  return Run(q, InterleavedHalf(interleaved, /*is_value=*/false),
             InterleavedHalf(interleaved, /*is_value=*/true), params, options);
}

std::vector<std::string> SupportedSimdTargets() {
  std::vector<std::string> names;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    names.push_back(hwy::TargetName(target));
  }
  return names;
}

bool PinSimdTarget(const std::string& name) {
  if (name.empty()) {
    hwy::SetSupportedTargetsForTest(0);
    return true;
  }
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (name == hwy::TargetName(target)) {
      hwy::SetSupportedTargetsForTest(target);
      return true;
    }
  }
  return false;
}

}  // namespace kvcheck
