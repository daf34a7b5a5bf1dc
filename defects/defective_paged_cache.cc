#include "defects/defective_paged_cache.h"

#include "src/base/status_macros.h"

namespace kvcheck::defects {

absl::StatusOr<std::unique_ptr<KvCache>> DefectivePagedCache::Create(PagedDefect defect,
                                                                    const CacheConfig& config) {
  KV_ASSIGN_OR_RETURN(const int64_t budget, StorageBudget("paged", config));
  return std::unique_ptr<KvCache>(new DefectivePagedCache(defect, budget));
}

const char* DefectivePagedCache::name() const {
  switch (defect_) {
    case PagedDefect::kBlockBoundaryOffByOne:
      return "paged_block_boundary_off_by_one";
    case PagedDefect::kSharedBlockWrittenInPlace:
      return "paged_shared_block_written_in_place";
    case PagedDefect::kResetKeepsBlockTable:
      return "paged_reset_keeps_block_table";
  }
  return "?";
}

std::unique_ptr<KvCache> DefectivePagedCache::Fork() const {
  return std::unique_ptr<KvCache>(new DefectivePagedCache(*this));
}

int64_t DefectivePagedCache::BlocksFor(int64_t tokens) const {
  if (defect_ == PagedDefect::kBlockBoundaryOffByOne) return tokens / kBlockTokens;
  return PagedCache::BlocksFor(tokens);
}

absl::StatusOr<PagedCache::BlockRef> DefectivePagedCache::WritableBlock(
    const BlockRef& block, CacheCounters& counters) const {
  if (defect_ == PagedDefect::kSharedBlockWrittenInPlace) return block;
  return PagedCache::WritableBlock(block, counters);
}

void DefectivePagedCache::ReleaseTables() {
  if (defect_ == PagedDefect::kResetKeepsBlockTable) return;
  PagedCache::ReleaseTables();
}

}  // namespace kvcheck::defects
