#include "src/tensor/layout.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace kvcheck {
namespace {

using ::kvcheck::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Layout, ContiguousStridesAndCount) {
  absl::StatusOr<Layout> layout = Layout::Contiguous({1, 3, 4, 64});
  ASSERT_OK(layout);
  EXPECT_THAT(layout->strides(), ElementsAre(768, 256, 64, 1));
  EXPECT_EQ(layout->num_elements(), 768);
  EXPECT_EQ(layout->required_storage(), 768);
  EXPECT_TRUE(layout->is_contiguous());
}

// candle's rule: a narrowed (B, H, n, D) view of a (B, H, Cap, D) buffer is contiguous only
// when n == Cap or B == H == 1; size-1 dimensions are not checked.
TEST(Layout, ContiguityRuleOfCandle) {
  auto narrowed = [](int64_t b, int64_t h, int64_t n, int64_t cap) {
    const Layout buffer = *Layout::Contiguous({b, h, cap, 64});
    return Layout::Strided({b, h, n, 64}, buffer.strides(), 0)->is_contiguous();
  };
  EXPECT_FALSE(narrowed(1, 3, 3, 4));
  EXPECT_TRUE(narrowed(1, 3, 4, 4));
  EXPECT_FALSE(narrowed(1, 3, 5, 8));
  EXPECT_TRUE(narrowed(1, 1, 3, 4));
  EXPECT_FALSE(narrowed(1, 3, 1, 4));  // n == 1 but H > 1 and Cap > 1
  // (1, 3, 1, 64) as a transpose of (1, 1, 3, 64): contiguous (size-1 dims exempt).
  EXPECT_TRUE(Layout::Strided({1, 3, 1, 64}, {192, 64, 192, 1}, 0)->is_contiguous());
  // (1, 3, 5, 64) as a transpose of (1, 5, 3, 64): not contiguous.
  EXPECT_FALSE(Layout::Strided({1, 3, 5, 64}, {960, 64, 192, 1}, 0)->is_contiguous());
  // Empty freshly made tensors are contiguous; an empty narrowed view of a buffer is not.
  EXPECT_TRUE(Layout::Contiguous({2, 0, 3})->is_contiguous());
  EXPECT_FALSE(Layout::Strided({2, 3, 0, 4}, {96, 32, 4, 1}, 0)->is_contiguous());
  // The offset does not matter.
  EXPECT_TRUE(Layout::Strided({2, 3}, {3, 1}, 17)->is_contiguous());
  // The product of the inner sizes passes int64_t in an empty view: no stride can match it
  // (found by tensor/huge_empty_and_broadcast_tensors; the product once wrapped to 0, which
  // the size-2 dimension's stride 0 matched).
  const int64_t big = int64_t{1} << 32;
  EXPECT_FALSE(Layout::Strided({0, 2, big, big}, {0, 0, big, 1}, 0)->is_contiguous());
  // Row-major strides up to the product's overflow, then only sizes 1 and 0: contiguous, and
  // computed without a signed overflow (UBSan found the old multiplication here).
  EXPECT_TRUE(Layout::Strided({0, 1, (int64_t{1} << 31) - 1, int64_t{1} << 40},
                              {0, 0, int64_t{1} << 40, 1}, 0)
                  ->is_contiguous());
  // A zero size further in brings the product back to 0.
  EXPECT_TRUE(Layout::Strided({2, 0, big, big}, {0, 0, big, 1}, 0)->is_contiguous());
}

TEST(Layout, RejectsNegativeAndOverflowingSizes) {
  EXPECT_THAT(Layout::Contiguous({2, -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimension 1")));
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(Layout::Contiguous({big, big}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflow")));
  // Zero elements, but the strides of the outer dimension would overflow.
  EXPECT_THAT(Layout::Contiguous({0, big, big}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflow")));
  EXPECT_THAT(Layout::Strided({2, 2}, {1}, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Layout::Strided({2, 2}, {2, -1}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative stride")));
  EXPECT_THAT(Layout::Strided({2}, {1}, -3), StatusIs(absl::StatusCode::kInvalidArgument));
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(Layout::Strided({3}, {max / 2 + 1}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("largest offset")));
  EXPECT_THAT(Layout::Strided({2}, {1}, max), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(Layout, RejectsRanksAboveTheMaximum) {
  const std::vector<int64_t> too_many(kMaxRank + 1, 1);
  EXPECT_THAT(Layout::Contiguous(too_many),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank")));
  EXPECT_THAT(Layout::Strided(too_many, too_many, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_OK(Layout::Contiguous(std::vector<int64_t>(kMaxRank, 2)));
}

// Narrowed keeps every invariant the factories compute (checked against Strided).
TEST(Layout, NarrowedMatchesAFreshlyValidatedLayout) {
  const Layout base = *Layout::Strided({3, 5, 4}, {40, 8, 1}, 7);
  for (int dim = 0; dim < 3; ++dim) {
    for (int64_t start = 0; start <= base.dim(dim); ++start) {
      for (int64_t length = 0; start + length <= base.dim(dim); ++length) {
        const Layout narrowed = base.Narrowed(dim, start, length);
        Dims shape = base.shape();
        shape[dim] = length;
        const Layout fresh = *Layout::Strided(
            shape, base.strides(), base.offset() + (length > 0 ? start * base.stride(dim) : 0));
        EXPECT_EQ(narrowed.num_elements(), fresh.num_elements());
        EXPECT_EQ(narrowed.required_storage(), fresh.required_storage());
        if (length > 0) {
          EXPECT_EQ(narrowed.offset(), fresh.offset());
        }
      }
    }
  }
}

// AssignNarrowed gives exactly Narrowed's layout whatever the layout held before: nothing, the
// base, another narrowing of it (the update it is for), or a layout that differs from one in
// a single field (a stride, another extent, the offset, the rank), which must not pass for one.
TEST(Layout, AssignNarrowedEqualsNarrowedFromAnyPriorLayout) {
  auto expect_same = [](const Layout& got, const Layout& want) {
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.strides(), want.strides());
    EXPECT_EQ(got.offset(), want.offset());
    EXPECT_EQ(got.num_elements(), want.num_elements());
    EXPECT_EQ(got.required_storage(), want.required_storage());
  };
  // Rank 4 (a cache buffer's: AssignNarrowed's unrolled path) and rank 3 (the general one).
  const std::vector<Layout> bases = {*Layout::Strided({2, 3, 5, 4}, {120, 40, 8, 1}, 7),
                                     *Layout::Strided({3, 5, 4}, {40, 8, 1}, 7)};
  for (const Layout& base : bases) {
    const int rank = base.rank();
    // A layout like `base` narrowed along `dim` with one field changed.
    auto changed = [&](int dim, int field, int64_t delta) {
      Dims shape = base.shape(), strides = base.strides();
      int64_t offset = base.offset();
      shape[dim] = 2;
      if (field < rank)
        shape[field] = field == dim ? 1 : std::max<int64_t>(1, shape[field] - 1);
      else if (field < 2 * rank)
        strides[field - rank] += delta;
      else
        offset += delta;
      return *Layout::Strided(shape, strides, offset);
    };
    for (int dim = 0; dim < rank; ++dim) {
      std::vector<Layout> priors = {Layout(), Layout::EmptyVector(), base, base.Narrowed(dim, 0, 2),
                                    base.Narrowed(dim, 1, 1)};
      for (int field = 0; field <= 2 * rank; ++field) priors.push_back(changed(dim, field, 1));
      Dims lower(base.shape().begin(), base.shape().end() - 1);
      Dims lower_strides(base.strides().begin(), base.strides().end() - 1);
      priors.push_back(*Layout::Strided(lower, lower_strides, base.offset()));
      for (const Layout& prior : priors) {
        for (int64_t start = 0; start <= base.dim(dim); ++start) {
          for (int64_t length = 0; start + length <= base.dim(dim); ++length) {
            SCOPED_TRACE(prior.DebugString() + " dim " + std::to_string(dim) + " start " +
                         std::to_string(start) + " length " + std::to_string(length));
            Layout layout = prior;
            layout.AssignNarrowed(base, dim, start, length);
            expect_same(layout, base.Narrowed(dim, start, length));
            // And again from that result: the in-place update of a view.
            const int64_t next = std::min(length + 1, base.dim(dim) - start);
            layout.AssignNarrowed(base, dim, start, next);
            expect_same(layout, base.Narrowed(dim, start, next));
          }
        }
      }
    }
  }
  const Layout empty_base = *Layout::Strided({3, 0, 4}, {40, 8, 1}, 7);
  Layout layout = *Layout::Strided({3, 5, 4}, {40, 8, 1}, 7);
  layout.AssignNarrowed(empty_base, 0, 1, 2);
  expect_same(layout, empty_base.Narrowed(0, 1, 2));
}

TEST(Layout, RequiredStorageAndOffsets) {
  const Layout layout = *Layout::Strided({2, 3}, {10, 2}, 5);
  EXPECT_EQ(layout.required_storage(), 5 + 10 + 4 + 1);
  EXPECT_EQ(layout.OffsetOf({1, 2}), 19);
  EXPECT_EQ(Layout::Strided({2, 0}, {10, 2}, 5)->required_storage(), 0);
  EXPECT_EQ(Layout().num_elements(), 1);
  EXPECT_EQ(layout.DebugString(), "shape [2, 3] strides [10, 2] offset 5");
}

}  // namespace
}  // namespace kvcheck
