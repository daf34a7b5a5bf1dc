// File: defective_paged_cache.h
// DefectivePagedCache: the block-table cache (src/cache/paged_cache.h) with one of the
// defects block tables typically have, each in one of its overridable steps:
//   kBlockBoundaryOffByOne: blocks for n tokens counted as n / 16, forgetting the partial
//     last block: the first token past a block boundary has no block, and the write trips
//     the cache's own table-bounds check (a KV_CHECK abort: a crash, as a new strategy's
//     first bug usually is);
//   kSharedBlockWrittenInPlace: no copy-on-write: after a Fork both caches write the shared
//     partial block, each overwriting the other's newest tokens;
//   kResetKeepsBlockTable: Reset forgets the lengths but keeps the block table, so the
//     cache still holds (and reports capacity for) the old blocks.
#ifndef KVCHECK_DEFECTS_DEFECTIVE_PAGED_CACHE_H_
#define KVCHECK_DEFECTS_DEFECTIVE_PAGED_CACHE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "src/cache/cache_config.h"
#include "src/cache/paged_cache.h"

namespace kvcheck::defects {

enum class PagedDefect { kBlockBoundaryOffByOne, kSharedBlockWrittenInPlace, kResetKeepsBlockTable };

class DefectivePagedCache : public PagedCache {
 public:
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(PagedDefect defect,
                                                         const CacheConfig& config);

  const char* name() const override;
  std::unique_ptr<KvCache> Fork() const override;

 protected:
  int64_t BlocksFor(int64_t tokens) const override;
  absl::StatusOr<BlockRef> WritableBlock(const BlockRef& block,
                                         CacheCounters& counters) const override;
  void ReleaseTables() override;

 private:
  DefectivePagedCache(PagedDefect defect, int64_t budget) : PagedCache(budget), defect_(defect) {}
  DefectivePagedCache(const DefectivePagedCache&) = default;

  PagedDefect defect_;
};

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_DEFECTIVE_PAGED_CACHE_H_
