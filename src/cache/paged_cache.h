// File: paged_cache.h
// PagedCache ("paged"): a block table, as vLLM-style engines keep their KV caches. Tokens live
// in blocks of kBlockTokens = 16 slots, one K and one V tensor (1, KH, 16, D) per block,
// allocated when a row reaches them; each batch row has its own table of blocks in position
// order and its own length (rows advance independently: AppendActive takes inactive rows).
//
// - Fork copies the tables, not the blocks: the two caches share every block (prefix
//   sharing). A block is written only when this cache is its only user (its reference count
//   is 1); otherwise it is copied first (copy-on-write per block). Only the partial last
//   block of a row is ever written again, so full blocks stay shared for good.
// - Views gather the blocks into new (B, KH, L, D) tensors, L the longest row: a view never
//   aliases a block, which is what makes the reference count enough for copy-on-write
//   (cache_buffers.h). Slots past a row's length have position -1 (attention skips them) and
//   hold NaN in test builds. Gathering allocates, so a view can fail with kResourceExhausted;
//   an Append whose view fails is undone (kv_cache.h).
// - capacity(): 16 slots per block of the row with the fewest blocks. bytes_held: every block
//   the tables reference, shared ones included; the storage budget counts blocks.
// - The protected virtual steps (BlocksFor, WritableBlock, ReleaseTables) are where block
//   tables differ; the defect catalogue's paged defects override them.
#ifndef KVCHECK_SRC_CACHE_PAGED_CACHE_H_
#define KVCHECK_SRC_CACHE_PAGED_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"

namespace kvcheck {

class PagedCache : public KvCache {
 public:
  static constexpr int64_t kBlockTokens = 16;

  // Errors: none for any configuration (initial_capacity and window are ignored).
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const CacheConfig& config);

  const char* name() const override { return "paged"; }
  std::unique_ptr<KvCache> Fork() const override;
  int64_t capacity() const override;
  bool supports_inactive_rows() const override { return true; }

  // Blocks of batch row b that another cache also references (prefix sharing after Fork).
  // REQUIRES: 0 <= b < B.
  int64_t SharedBlocks(int64_t b) const;

 protected:
  struct Block {
    Tensor k, v;  // (1, KH, kBlockTokens, D)
  };
  using BlockRef = std::shared_ptr<Block>;

  explicit PagedCache(int64_t budget) : budget_(budget) {}
  PagedCache(const PagedCache&) = default;

  // Blocks a row needs to hold `tokens` tokens.
  virtual int64_t BlocksFor(int64_t tokens) const;
  // `block` made writable by this cache: the block itself when no other cache references it,
  // else a copy (copy-on-write), counted in `counters`. Errors: kResourceExhausted.
  virtual absl::StatusOr<BlockRef> WritableBlock(const BlockRef& block,
                                                 CacheCounters& counters) const;
  // Drops the block tables (Reset).
  virtual void ReleaseTables();

  std::vector<std::vector<BlockRef>> tables_;  // one per batch row, blocks in position order

 private:
  absl::Status DoAppend(const Tensor& k, const Tensor& v, absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> DoView() const override;
  void DoReset() override;

  int64_t BlockBytes() const;

  int64_t budget_;  // storage budget in bytes (CacheConfig::max_bytes)
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_CACHE_PAGED_CACHE_H_
