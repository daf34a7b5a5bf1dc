#include "src/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/base/poison_unused.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/storage.h"
#include "src/tensor/view_ops.h"
#include "testing/status_matchers.h"

namespace kvcheck {
namespace {

using ::kvcheck::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Tensor Iota(DType dtype, std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> values(count);
  std::iota(values.begin(), values.end(), 0.0f);
  return *Tensor::FromFloats(dtype, shape, values);
}

TEST(Tensor, CopiesShareStorageAndDeepCopyDoesNot) {
  Tensor a = Iota(DType::kF32, {2, 3});
  Tensor alias = a;
  Tensor owned = a.DeepCopy();
  EXPECT_TRUE(alias.SharesStorageWith(a));
  EXPECT_FALSE(owned.SharesStorageWith(a));
  a.SetFloat({1, 2}, 42.0f);
  EXPECT_EQ(alias.GetFloat({1, 2}), 42.0f);
  EXPECT_EQ(owned.GetFloat({1, 2}), 5.0f);
}

TEST(Tensor, FromFloatsRoundsAndChecksCount) {
  Tensor h = *Tensor::FromFloats(DType::kF16, {2}, {1.0f / 3.0f, 70000.0f});
  EXPECT_EQ(h.GetBits({0}), 0x3555u);
  EXPECT_TRUE(std::isinf(h.GetFloat({1})));
  EXPECT_THAT(Tensor::FromFloats(DType::kF32, {2, 2}, {1.0f}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 elements")));
  // Too many values is as wrong as too few (no silent truncation, no write past the end).
  EXPECT_THAT(Tensor::FromFloats(DType::kF16, {2}, {1.0f, 2.0f, 3.0f}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 elements")));
}

TEST(Tensor, ZerosRejectsHostileSizes) {
  EXPECT_THAT(Tensor::Zeros(DType::kF32, {-1}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Tensor::Zeros(DType::kF32, {int64_t{1} << 62, 4}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Tensor::Zeros(DType::kF32, {int64_t{1} << 40}),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_OK(Tensor::Zeros(DType::kBF16, {0, 5}));
}

// The storage limit admits a buffer of exactly its size and refuses one byte more.
TEST(Tensor, StorageLimitIsInclusive) {
  const int64_t limit = MaxStorageBytes();
  SetMaxStorageBytes(4096);
  EXPECT_OK(Tensor::Zeros(DType::kF32, {1024}));
  EXPECT_OK(Tensor::Zeros(DType::kF16, {2048}));
  EXPECT_THAT(Tensor::Zeros(DType::kF32, {1025}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("limit is 4096")));
  EXPECT_THAT(Tensor::Zeros(DType::kBF16, {2049}), StatusIs(absl::StatusCode::kResourceExhausted));
  SetMaxStorageBytes(limit);
}

// Storage starts every buffer on a 64-byte boundary, zeroed all the way to its last byte,
// below and above the huge-page size; large buffers start at different offsets into their
// huge page (a cache's buffers must not all map their slots to the same cache sets).
TEST(Tensor, StorageAlignsAndColorsLargeBuffersAndZeroesThem) {
  constexpr int64_t kHuge = Storage::kHugePageBytes;
  std::vector<std::shared_ptr<Storage>> large;
  for (int64_t bytes : {int64_t{4}, kHuge - 4, kHuge, kHuge + 4, 3 * kHuge + 100, kHuge, kHuge}) {
    absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::Allocate(DType::kF32, bytes / 4);
    ASSERT_OK(storage);
    const auto address = reinterpret_cast<uintptr_t>((*storage)->bytes());
    EXPECT_EQ(address % 64, 0u) << bytes;
    const std::byte* data = (*storage)->bytes();
    EXPECT_TRUE(std::all_of(data, data + bytes, [](std::byte b) { return b == std::byte{0}; }))
        << bytes;
    if (bytes >= kHuge) large.push_back(*storage);
  }
  std::vector<uintptr_t> offsets;
  for (const auto& storage : large) {
    offsets.push_back(reinterpret_cast<uintptr_t>(storage->bytes()) %
                      static_cast<uintptr_t>(kHuge));
  }
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(std::unique(offsets.begin(), offsets.end()), offsets.end())
      << "two large buffers start at the same offset into a huge page";
}

// The default build (the tests') poisons: every element of a new uninitialized tensor is NaN,
// in every dtype, so an output element a kernel forgets to write cannot pass for a value.
// (--config=opt does not poison: there only the shape is checked.)
TEST(Tensor, UninitializedIsContiguousAndPoisonedInTheTestBuild) {
  for (DType dtype : kAllDTypes) {
    absl::StatusOr<Tensor> t = Tensor::Uninitialized(dtype, {2, 3, 5});
    ASSERT_OK(t);
    EXPECT_EQ(t->dtype(), dtype);
    EXPECT_THAT(t->shape(), ElementsAre(2, 3, 5));
    EXPECT_TRUE(t->is_contiguous());
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        for (int64_t k = 0; k < 5; ++k) {
          if (!kPoisonUnused) continue;
          EXPECT_TRUE(std::isnan(t->GetFloat({i, j, k})))
              << DTypeName(dtype) << " (" << i << ", " << j << ", " << k << ")";
        }
      }
    }
  }
  EXPECT_THAT(Tensor::Uninitialized(DType::kF32, {-1}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Tensor::Uninitialized(DType::kF32, {int64_t{1} << 40}),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_OK(Tensor::Uninitialized(DType::kF16, {0, 5}));
}

TEST(Tensor, NarrowIsAViewAndChecksBounds) {
  Tensor t = Iota(DType::kF32, {2, 5});
  absl::StatusOr<Tensor> n = Narrow(t, 1, 1, 3);
  ASSERT_OK(n);
  EXPECT_TRUE(n->SharesStorageWith(t));
  EXPECT_THAT(n->ToFloats(), ElementsAre(1, 2, 3, 6, 7, 8));
  EXPECT_FALSE(n->is_contiguous());
  EXPECT_THAT(Narrow(t, 1, 3, 3),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("dimension 1 of size 5")));
  EXPECT_THAT(Narrow(t, 2, 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimension 2 out of range")));
  EXPECT_THAT(Narrow(t, 0, -1, 1), StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(Narrow(t, 0, 0, -1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Narrow(t, 0, INT64_MAX, INT64_MAX), StatusIs(absl::StatusCode::kOutOfRange));
  ASSERT_OK(Narrow(t, 1, 5, 0));
}

TEST(Tensor, TransposeAndPermute) {
  Tensor t = Iota(DType::kF32, {2, 3});
  Tensor tt = *Transpose(t, 0, 1);
  EXPECT_THAT(tt.shape(), ElementsAre(3, 2));
  EXPECT_THAT(tt.ToFloats(), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_THAT(Transpose(t, 0, 2), StatusIs(absl::StatusCode::kInvalidArgument));
  Tensor p = *Permute(Iota(DType::kF32, {2, 3, 4}), {2, 0, 1});
  EXPECT_THAT(p.shape(), ElementsAre(4, 2, 3));
  EXPECT_EQ(p.GetFloat({3, 1, 2}), 1 * 12 + 2 * 4 + 3);
  EXPECT_THAT(Permute(t, {0, 0}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(Tensor, ReshapeViewsWhenPossibleAndCopiesOtherwise) {
  Tensor t = Iota(DType::kF32, {2, 3, 4});
  Tensor r = *Reshape(t, {6, 4});
  EXPECT_TRUE(r.SharesStorageWith(t));
  Tensor split = *Reshape(*Narrow(t, 2, 0, 2), {2, 3, 2, 1});  // inner dim split: still a view
  EXPECT_TRUE(split.SharesStorageWith(t));
  EXPECT_THAT(split.ToFloats(), ElementsAre(0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21));
  Tensor tr = *Transpose(t, 1, 2);  // (2, 4, 3) with strides (12, 1, 4)
  Tensor merged = *Reshape(tr, {2, 12});
  EXPECT_FALSE(merged.SharesStorageWith(t));
  EXPECT_EQ(merged.ToFloats(), tr.ToFloats());
  EXPECT_THAT(Reshape(t, {5, 5}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("24 elements")));
}

// candle 0.11's KvCache trap, with our semantics: (B, S, H, D).transpose(1, 2) is non-contiguous
// for S > 1 and contiguous for S == 1; SliceSet accepts both.
TEST(Tensor, SliceSetAcceptsTransposedSources) {
  for (int64_t seq : {1, 3}) {
    Tensor bshd = Iota(DType::kF32, {1, seq, 3, 4});
    Tensor src = *Transpose(bshd, 1, 2);  // (1, 3, seq, 4)
    EXPECT_EQ(src.is_contiguous(), seq == 1);
    Tensor buffer = *Tensor::Filled(DType::kF32, {1, 3, 8, 4}, -1.0f);
    ASSERT_OK(SliceSet(buffer, src, 2, 2));
    EXPECT_EQ((*Narrow(buffer, 2, 2, seq)).ToFloats(), src.ToFloats());
    EXPECT_EQ(buffer.GetFloat({0, 0, 1, 3}), -1.0f);
    EXPECT_EQ(buffer.GetFloat({0, 2, 2 + seq, 0}), -1.0f);
  }
}

TEST(Tensor, SliceSetErrorsWriteNothing) {
  Tensor buffer = Iota(DType::kF32, {2, 4});
  const std::vector<float> before = buffer.ToFloats();
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF32, {2, 3}), 1, 2),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("exceeds dimension 1")));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF16, {2, 1}), 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype")));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF32, {3, 1}), 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimension 0")));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF32, {2}), 0, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank")));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF32, {2, 1}), 1, -1),
              StatusIs(absl::StatusCode::kOutOfRange));
  // An empty source is checked like any other: its window may end at the dimension's end,
  // not past it, and its other dimensions and dtype must match.
  EXPECT_OK(SliceSet(buffer, Iota(DType::kF32, {2, 0}), 1, 4));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF32, {2, 0}), 1, 5),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("exceeds dimension 1")));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF32, {2, 0}), 1, -1),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF32, {0, 4}), 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimension 0")));
  EXPECT_THAT(SliceSet(buffer, Iota(DType::kF16, {2, 0}), 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype")));
  EXPECT_EQ(buffer.ToFloats(), before);
}

TEST(Tensor, SliceSetFromOverlappingViewOfItself) {
  Tensor t = Iota(DType::kF32, {6});
  ASSERT_OK(SliceSet(t, *Narrow(t, 0, 0, 4), 0, 2));  // memmove-like semantics
  EXPECT_THAT(t.ToFloats(), ElementsAre(0, 1, 0, 1, 2, 3));
}

TEST(Tensor, CatJoinsStridedInputsIntoNewStorage) {
  Tensor a = Iota(DType::kBF16, {2, 2});
  Tensor b = *Transpose(Iota(DType::kBF16, {3, 2}), 0, 1);  // (2, 3)
  Tensor c = *Cat({a, b}, 1);
  EXPECT_THAT(c.shape(), ElementsAre(2, 5));
  EXPECT_THAT(c.ToFloats(), ElementsAre(0, 1, 0, 2, 4, 2, 3, 1, 3, 5));
  Tensor single = *Cat({a}, 0);
  EXPECT_FALSE(single.SharesStorageWith(a));
  EXPECT_THAT(Cat({}, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Cat({a, Iota(DType::kF32, {2, 2})}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype")));
  EXPECT_THAT(Cat({a, Iota(DType::kBF16, {3, 3})}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dimension 1")));
}

TEST(Tensor, ContiguousKeepsStorageOnlyWhenAlreadyContiguous) {
  Tensor t = Iota(DType::kF16, {3, 4});
  EXPECT_TRUE(Contiguous(t)->SharesStorageWith(t));
  Tensor tr = *Transpose(t, 0, 1);
  Tensor c = *Contiguous(tr);
  EXPECT_FALSE(c.SharesStorageWith(t));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.ToBits(), tr.ToBits());
}

// A copy between tensors of one dtype moves bits, not values: every one of the 65,536 f16 and
// bf16 patterns (signalling NaNs, NaN payloads and signs, subnormals, -0) comes out as it went
// in, through every copying op. (A copy through f32 would quiet the signalling NaNs.)
TEST(Tensor, SameDtypeCopiesKeepEveryBitPattern) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    Tensor all = *Tensor::Zeros(dtype, {256, 256});
    std::vector<uint16_t> patterns(65536);
    std::iota(patterns.begin(), patterns.end(), uint16_t{0});
    std::memcpy(all.storage()->bytes(), patterns.data(), patterns.size() * 2);
    ASSERT_EQ(all.ToBits(), std::vector<uint32_t>(patterns.begin(), patterns.end()));
    const Tensor transposed = *Transpose(all, 0, 1);
    const std::vector<uint32_t> transposed_bits = transposed.ToBits();
    EXPECT_EQ(Contiguous(transposed)->ToBits(), transposed_bits) << DTypeName(dtype);
    EXPECT_EQ(Cast(transposed, dtype)->ToBits(), transposed_bits) << DTypeName(dtype);
    Tensor target = *Tensor::Zeros(dtype, {256, 256});
    ASSERT_OK(CopyInto(target, transposed));
    EXPECT_EQ(target.ToBits(), transposed_bits) << DTypeName(dtype);
    Tensor wider = *Tensor::Zeros(dtype, {256, 300});
    ASSERT_OK(SliceSet(wider, transposed, 1, 44));
    EXPECT_EQ(Narrow(wider, 1, 44, 256)->ToBits(), transposed_bits) << DTypeName(dtype);
    std::vector<uint32_t> twice = transposed_bits;
    twice.insert(twice.end(), transposed_bits.begin(), transposed_bits.end());
    EXPECT_EQ(Cat({transposed, transposed}, 0)->ToBits(), twice) << DTypeName(dtype);
  }
}

TEST(Tensor, CastAndCopyIntoConvert) {
  Tensor f = *Tensor::FromFloats(DType::kF32, {3}, {1.0f, 1.0f / 3.0f, 1e6f});
  Tensor h = *Cast(f, DType::kF16);
  EXPECT_THAT(h.ToBits(), ElementsAre(0x3c00u, 0x3555u, 0x7c00u));
  Tensor back = *Tensor::Zeros(DType::kF32, {3});
  ASSERT_OK(CopyInto(back, h));
  EXPECT_EQ(back.GetFloat({1}), F16BitsToF32(0x3555));
  EXPECT_THAT(CopyInto(back, *Tensor::Zeros(DType::kF32, {4})),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace kvcheck

namespace kvcheck {
namespace {

// Found by the tensor_ops fuzzer (fuzz/regressions/tensor_ops/crash-86267baa...): an empty
// view may carry any stride, and traversing it must not form stride * size products
// (signed overflow under UBSan).
TEST(Tensor, EmptyViewWithHugeStrideIsTraversedSafely) {
  absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::Allocate(DType::kF32, 4);
  ASSERT_TRUE(storage.ok());
  absl::StatusOr<Layout> layout =
      Layout::Strided({2, 9, 0}, {int64_t{1} << 62, int64_t{1} << 62, 1}, 0);
  ASSERT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<Tensor> view = Tensor::View(*storage, *layout);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE(view->ToBits().empty());
  absl::StatusOr<Tensor> copy = Contiguous(*view);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->num_elements(), 0);
}

// Found by the tensor_ops fuzzer (fuzz/regressions/tensor_ops/crash-40be7db7...): a permuted
// empty shape can have no representable row-major strides. Contiguous must report it and
// DeepCopy must not crash (it dereferenced a failed Zeros).
TEST(Tensor, EmptyShapeWithoutContiguousStridesFailsCleanly) {
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  absl::StatusOr<Tensor> t = Tensor::Zeros(DType::kF32, {2, 0, kHuge, 0});
  ASSERT_TRUE(t.ok()) << t.status();
  const int order[] = {1, 3, 2, 0};
  absl::StatusOr<Tensor> permuted = Permute(*t, order);  // [0, 0, 2^63 - 1, 2]
  ASSERT_TRUE(permuted.ok());
  ASSERT_FALSE(permuted->is_contiguous());
  EXPECT_EQ(Contiguous(*permuted).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Cast(*permuted, DType::kBF16).status().code(), absl::StatusCode::kInvalidArgument);
  const Tensor copy = permuted->DeepCopy();
  EXPECT_EQ(copy.num_elements(), 0);
  EXPECT_FALSE(copy.SharesStorageWith(*permuted));
  EXPECT_TRUE(copy.ToBits().empty());
}

}  // namespace
}  // namespace kvcheck
