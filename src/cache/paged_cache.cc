#include "src/cache/paged_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/check.h"
#include "src/base/checked_math.h"
#include "src/base/status_macros.h"
#include "src/cache/cache_buffers.h"

namespace kvcheck {

using cache_internal::AllocateBuffer;
using cache_internal::CopyTokens;

absl::StatusOr<std::unique_ptr<KvCache>> PagedCache::Create(const CacheConfig& config) {
  KV_ASSIGN_OR_RETURN(const int64_t budget, StorageBudget("paged", config));
  return std::unique_ptr<KvCache>(new PagedCache(budget));
}

std::unique_ptr<KvCache> PagedCache::Fork() const {
  // Copying the tables shares every block: the reference counts now say "shared".
  return std::unique_ptr<KvCache>(new PagedCache(*this));
}

int64_t PagedCache::capacity() const {
  if (tables_.empty()) return 0;
  size_t fewest = tables_[0].size();
  for (const std::vector<BlockRef>& table : tables_) fewest = std::min(fewest, table.size());
  return static_cast<int64_t>(fewest) * kBlockTokens;
}

int64_t PagedCache::SharedBlocks(int64_t b) const {
  int64_t shared = 0;
  for (const BlockRef& block : tables_[b]) shared += block.use_count() > 1 ? 1 : 0;
  return shared;
}

int64_t PagedCache::BlocksFor(int64_t tokens) const {
  return (tokens + kBlockTokens - 1) / kBlockTokens;
}

absl::StatusOr<PagedCache::BlockRef> PagedCache::WritableBlock(const BlockRef& block,
                                                               CacheCounters& counters) const {
  // Views are gathered copies, so the tables are the only references: a count of 1 means
  // no other cache can see a write into this block.
  if (block.use_count() == 1) return block;
  auto copy = std::make_shared<Block>();
  KV_ASSIGN_OR_RETURN(copy->k, AllocateBuffer(block->k.dtype(), block->k.shape(), counters));
  KV_ASSIGN_OR_RETURN(copy->v, AllocateBuffer(block->v.dtype(), block->v.shape(), counters));
  CopyTokens(block->k, 0, kBlockTokens, copy->k, 0);
  CopyTokens(block->v, 0, kBlockTokens, copy->v, 0);
  counters.bytes_other_copied += 2 * block->k.num_elements() * DTypeSize(block->k.dtype());
  return copy;
}

void PagedCache::ReleaseTables() { tables_.clear(); }

int64_t PagedCache::BlockBytes() const {
  // One K and one V block: the bytes of 16 slots of every head (B = 1 per block).
  return CheckedMul(kBlockTokens, cache_internal::SlotBytes(*shape()) / shape()->batch)
      .value_or(INT64_MAX);
}

absl::Status PagedCache::DoAppend(const Tensor& k, const Tensor& v,
                                  absl::Span<const bool> active) {
  const KvShape& shape = *this->shape();
  const int64_t seq = k.dim(2);
  // The first append after construction or Reset starts the tables (at commit).
  const bool fresh = tables_.empty();
  KV_CHECK_MSG(fresh || static_cast<int64_t>(tables_.size()) == shape.batch,
               "paged: one block table per batch row");
  static const std::vector<BlockRef> kNoBlocks;
  auto table_of = [&](int64_t b) -> const std::vector<BlockRef>& {
    return fresh ? kNoBlocks : tables_[b];
  };
  // Phase 1, which may fail and changes no member: the blocks every active row will write,
  // allocated or made writable (copy-on-write), within the budget.
  int64_t blocks_after = 0;
  for (int64_t b = 0; b < shape.batch; ++b) {
    const int64_t held = static_cast<int64_t>(table_of(b).size());
    const bool writes = active.empty() || active[b];
    blocks_after += writes ? std::max(held, BlocksFor(row_seq_len(b) + seq)) : held;
  }
  KV_RETURN_IF_ERROR(cache_internal::CheckStorageBudget(
      name(), CheckedMul(blocks_after, BlockBytes()), budget_));
  CacheCounters counters = counters_;
  std::vector<std::vector<BlockRef>> next(shape.batch);
  const int64_t block_dims[] = {1, shape.num_kv_heads, kBlockTokens, shape.head_dim};
  for (int64_t b = 0; b < shape.batch; ++b) {
    if (!active.empty() && !active[b]) continue;
    const std::vector<BlockRef>& table = table_of(b);
    const int64_t first = row_seq_len(b) / kBlockTokens;  // the block the first token goes to
    const int64_t needed = BlocksFor(row_seq_len(b) + seq);
    next[b].reserve(std::max<int64_t>(needed, static_cast<int64_t>(table.size())));
    for (int64_t i = 0; i < static_cast<int64_t>(table.size()); ++i) {
      if (i < first) {
        next[b].push_back(table[i]);  // full blocks before the write: shared as they are
      } else {
        KV_ASSIGN_OR_RETURN(BlockRef writable, WritableBlock(table[i], counters));
        next[b].push_back(std::move(writable));
      }
    }
    while (static_cast<int64_t>(next[b].size()) < needed) {
      auto block = std::make_shared<Block>();
      KV_ASSIGN_OR_RETURN(block->k, AllocateBuffer(shape.dtype, block_dims, counters));
      KV_ASSIGN_OR_RETURN(block->v, AllocateBuffer(shape.dtype, block_dims, counters));
      next[b].push_back(std::move(block));
    }
  }
  // Phase 2, which cannot fail: write each row's tokens block by block.
  for (int64_t b = 0; b < shape.batch; ++b) {
    if (!active.empty() && !active[b]) continue;
    const Tensor k_row = k.Narrowed(0, b, 1), v_row = v.Narrowed(0, b, 1);
    for (int64_t s = 0; s < seq;) {
      const int64_t position = row_seq_len(b) + s;
      const int64_t index = position / kBlockTokens, slot = position % kBlockTokens;
      KV_CHECK_MSG(index < static_cast<int64_t>(next[b].size()),
                   "paged: a token position past the row's block table");
      const int64_t count = std::min(seq - s, kBlockTokens - slot);
      CopyTokens(k_row, s, count, next[b][index]->k, slot);
      CopyTokens(v_row, s, count, next[b][index]->v, slot);
      s += count;
    }
  }
  // Phase 3: commit (the replaced references go; shared blocks lose one user).
  if (fresh) tables_.resize(shape.batch);
  for (int64_t b = 0; b < shape.batch; ++b) {
    if (active.empty() || active[b]) tables_[b] = std::move(next[b]);
  }
  counters_ = counters;
  int64_t blocks = 0;
  for (const std::vector<BlockRef>& table : tables_) blocks += static_cast<int64_t>(table.size());
  counters_.bytes_held = blocks * BlockBytes();
  return absl::OkStatus();
}

absl::StatusOr<CacheView> PagedCache::DoView() const {
  const KvShape& shape = *this->shape();
  int64_t longest = 0;
  bool equal = true;
  for (int64_t b = 0; b < shape.batch; ++b) {
    longest = std::max(longest, row_seq_len(b));
    equal = equal && row_seq_len(b) == row_seq_len(0);
  }
  CacheView view;
  const int64_t dims[] = {shape.batch, shape.num_kv_heads, longest, shape.head_dim};
  KV_ASSIGN_OR_RETURN(view.k, Tensor::Zeros(shape.dtype, dims));
  KV_ASSIGN_OR_RETURN(view.v, Tensor::Zeros(shape.dtype, dims));
  if (kPoisonUnused && !equal) {
    cache_internal::FillNaN(view.k);
    cache_internal::FillNaN(view.v);
  }
  if (!equal) view.positions.assign(shape.batch * longest, -1);
  for (int64_t b = 0; b < shape.batch; ++b) {
    const int64_t length = row_seq_len(b);
    const Tensor k_row = view.k.Narrowed(0, b, 1), v_row = view.v.Narrowed(0, b, 1);
    for (int64_t first = 0; first < length; first += kBlockTokens) {
      KV_CHECK_MSG(first / kBlockTokens < static_cast<int64_t>(tables_[b].size()),
                   "paged: a row longer than its block table");
      const BlockRef& block = tables_[b][first / kBlockTokens];
      const int64_t count = std::min(kBlockTokens, length - first);
      CopyTokens(block->k, 0, count, k_row, first);
      CopyTokens(block->v, 0, count, v_row, first);
    }
    if (!equal) {
      for (int64_t j = 0; j < length; ++j) view.positions[b * longest + j] = j;
    }
  }
  return view;
}

void PagedCache::DoReset() {
  ReleaseTables();
  counters_.bytes_held = 0;
}

}  // namespace kvcheck
