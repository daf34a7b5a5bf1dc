// Prefix sharing in the paged cache: a Fork shares every block; a write copies only the
// partial block it lands in, per row (full blocks stay shared for good); SharedBlocks and the
// counters say so; Reset drops only this cache's references.
#include "src/cache/paged_cache.h"

#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace kvcheck {
namespace {

constexpr int64_t kB = 2, kKH = 1, kD = 2;
// K and V of one 16-token block of one row, f32.
constexpr int64_t kBlockBytes = 2 * kKH * PagedCache::kBlockTokens * kD * 4;

// (B, KH, S, D) tokens whose values start at `first` and count up: every token distinct.
Tensor Tokens(int64_t seq, float first) {
  std::vector<float> values(kB * kKH * seq * kD);
  std::iota(values.begin(), values.end(), first);
  return *Tensor::FromFloats(DType::kF32, {kB, kKH, seq, kD}, values);
}

std::unique_ptr<PagedCache> NewPaged() {
  absl::StatusOr<std::unique_ptr<KvCache>> made = PagedCache::Create({});
  EXPECT_OK(made);
  return std::unique_ptr<PagedCache>(static_cast<PagedCache*>(made->release()));
}

std::unique_ptr<PagedCache> ForkOf(const PagedCache& cache) {
  return std::unique_ptr<PagedCache>(static_cast<PagedCache*>(cache.Fork().release()));
}

std::vector<float> ViewedK(const KvCache& cache) {
  absl::StatusOr<CacheView> view = cache.View();
  EXPECT_OK(view);
  return view->k.ToFloats();
}

TEST(PagedCache, ForkSharesBlocksAndCopiesOnlyThePartialBlockItWrites) {
  std::unique_ptr<PagedCache> parent = NewPaged();
  ASSERT_OK(parent->Append(Tokens(20, 0), Tokens(20, 1000)));  // a full and a partial block
  EXPECT_EQ(parent->SharedBlocks(0), 0);
  const std::vector<float> parent_k = ViewedK(*parent);

  std::unique_ptr<PagedCache> child = ForkOf(*parent);
  for (int64_t b = 0; b < kB; ++b) {
    EXPECT_EQ(parent->SharedBlocks(b), 2) << "row " << b;
    EXPECT_EQ(child->SharedBlocks(b), 2) << "row " << b;
  }
  EXPECT_EQ(child->counters().bytes_other_copied, parent->counters().bytes_other_copied);

  // One token to row 0 of the child: its partial block is copied, nothing else.
  const CacheCounters before = child->counters();
  const bool row0[] = {true, false};
  ASSERT_OK(child->AppendActive(Tokens(1, 5000), Tokens(1, 6000), row0));
  EXPECT_EQ(child->counters().bytes_other_copied - before.bytes_other_copied, kBlockBytes);
  EXPECT_EQ(child->counters().bytes_allocated - before.bytes_allocated, kBlockBytes);
  EXPECT_EQ(child->counters().bytes_held, before.bytes_held);  // a copy replaced a shared one
  EXPECT_EQ(child->SharedBlocks(0), 1);  // the full block stays shared
  EXPECT_EQ(child->SharedBlocks(1), 2);  // row 1 was not written
  EXPECT_EQ(parent->SharedBlocks(0), 1);
  EXPECT_EQ(parent->SharedBlocks(1), 2);
  EXPECT_EQ(ViewedK(*parent), parent_k);  // the write went to the child's copy

  // The rest of that block and one more: the copy is the child's own now, the next block new.
  const CacheCounters own = child->counters();
  ASSERT_OK(child->AppendActive(Tokens(12, 7000), Tokens(12, 8000), row0));
  EXPECT_EQ(child->row_seq_len(0), 33);
  EXPECT_EQ(child->counters().bytes_other_copied, own.bytes_other_copied);
  EXPECT_EQ(child->counters().bytes_allocated - own.bytes_allocated, kBlockBytes);
  EXPECT_EQ(child->SharedBlocks(0), 1);

  // The parent writes row 1: it copies its own partial block; the child's stays (now unshared).
  const bool row1[] = {false, true};
  ASSERT_OK(parent->AppendActive(Tokens(1, 9000), Tokens(1, 9500), row1));
  EXPECT_EQ(parent->SharedBlocks(1), 1);
  EXPECT_EQ(child->SharedBlocks(1), 1);

  // Reset drops the child's references only: the parent's blocks are its own again, intact.
  child->Reset();
  EXPECT_EQ(parent->SharedBlocks(0), 0);
  EXPECT_EQ(parent->SharedBlocks(1), 0);
  EXPECT_EQ(parent->row_seq_len(0), 20);
  const std::vector<float> parent_after = ViewedK(*parent);
  for (int64_t t = 0; t < 20; ++t) {  // row 0 is as it was before the fork
    for (int64_t d = 0; d < kD; ++d) {
      EXPECT_EQ(parent_after[t * kD + d], parent_k[t * kD + d]) << "token " << t;
    }
  }
}

// A fork at a block boundary shares only full blocks: the next write opens a new block and
// copies nothing.
TEST(PagedCache, ForkAtABlockBoundaryCopiesNothing) {
  std::unique_ptr<PagedCache> parent = NewPaged();
  ASSERT_OK(parent->Append(Tokens(16, 0), Tokens(16, 1000)));
  std::unique_ptr<PagedCache> child = ForkOf(*parent);
  const CacheCounters before = child->counters();
  ASSERT_OK(child->Append(Tokens(1, 5000), Tokens(1, 6000)));
  EXPECT_EQ(child->counters().bytes_other_copied, before.bytes_other_copied);
  EXPECT_EQ(child->counters().bytes_allocated - before.bytes_allocated, kB * kBlockBytes);
  for (int64_t b = 0; b < kB; ++b) {
    EXPECT_EQ(child->SharedBlocks(b), 1) << "row " << b;
    EXPECT_EQ(parent->SharedBlocks(b), 1) << "row " << b;
  }
}

}  // namespace
}  // namespace kvcheck
