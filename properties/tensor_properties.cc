#include "properties/tensor_properties.h"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "properties/dense_model.h"
#include "properties/generators.h"
#include "rapidcheck.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::properties {
namespace {

// A tensor of rank 1..4, dims 0..5, any dtype, any layout, values incl. NaN/inf.
TensorSpec GenAnyTensorSpec(int min_rank = 1, int64_t min_dim = 0) {
  const DType dtype = *GenDType();
  const std::vector<int64_t> shape = *GenShape(min_rank, 4, min_dim, 5);
  return *GenTensorSpec(dtype, shape, Values::kAny, LayoutKind::kAny);
}

Tensor Build(const TensorSpec& spec) {
  absl::StatusOr<Tensor> t = Materialize(spec);
  RC_ASSERT(t.ok());
  return *std::move(t);
}

template <typename T>
T Ok(absl::StatusOr<T> value) {
  RC_ASSERT(value.ok());
  return *std::move(value);
}

std::vector<uint8_t> StorageBytes(const Tensor& t) {
  const std::byte* bytes = t.storage()->bytes();
  return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(bytes),
                              reinterpret_cast<const uint8_t*>(bytes) + t.storage()->num_bytes());
}

void NarrowMatchesModel() {
  const Tensor t = Build(GenAnyTensorSpec());
  const int dim = *Uniform(0, t.rank());
  const int64_t start = *Uniform<int64_t>(0, t.dim(dim) + 1);
  const int64_t length = *Uniform<int64_t>(0, t.dim(dim) - start + 1);
  const Tensor n = Ok(Narrow(t, dim, start, length));
  RC_ASSERT(Snapshot(n) == ModelNarrow(Snapshot(t), dim, start, length));
  RC_ASSERT(n.SharesStorageWith(t));
  RC_CLASSIFY(length == t.dim(dim), "full extent");
  RC_CLASSIFY(length == 0, "empty");
}

void NarrowCatRoundTrip() {
  const Tensor t = Build(GenAnyTensorSpec());
  const int dim = *Uniform(0, t.rank());
  // Split points along dim (sorted, possibly repeated: empty pieces are allowed).
  std::vector<int64_t> cuts = *rc::gen::container<std::vector<int64_t>>(
      *Uniform(0, 4), Uniform<int64_t>(0, t.dim(dim) + 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(t.dim(dim));
  std::vector<Tensor> pieces;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    pieces.push_back(Ok(Narrow(t, dim, cuts[i], cuts[i + 1] - cuts[i])));
  }
  const Tensor joined = Ok(Cat(pieces, dim));
  RC_ASSERT(Snapshot(joined) == Snapshot(t));
  RC_ASSERT(joined.is_contiguous());
  RC_ASSERT(!joined.SharesStorageWith(t));
  // And back: narrowing the joined tensor gives each piece.
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    RC_ASSERT(Snapshot(Ok(Narrow(joined, dim, cuts[i], cuts[i + 1] - cuts[i]))) ==
              Snapshot(pieces[i]));
  }
  RC_CLASSIFY(pieces.size() > 2, "3+ pieces");
}

void CatMatchesModel() {
  const DType dtype = *GenDType();
  const std::vector<int64_t> shape = *GenShape(1, 4, 0, 4);
  const int dim = *Uniform(0, static_cast<int>(shape.size()));
  const int count = *Uniform(1, 4);
  std::vector<Tensor> parts;
  std::vector<DenseTensor> models;
  for (int i = 0; i < count; ++i) {
    std::vector<int64_t> part_shape = shape;
    part_shape[dim] = *Uniform<int64_t>(0, 4);
    parts.push_back(Build(*GenTensorSpec(dtype, part_shape, Values::kAny, LayoutKind::kAny)));
    models.push_back(Snapshot(parts.back()));
  }
  RC_ASSERT(Snapshot(Ok(Cat(parts, dim))) == ModelCat(models, dim));
}

void TransposeTwiceIsIdentity() {
  const Tensor t = Build(GenAnyTensorSpec());
  const int a = *Uniform(0, t.rank());
  const int b = *Uniform(0, t.rank());
  const Tensor once = Ok(Transpose(t, a, b));
  RC_ASSERT(Snapshot(once) == ModelTranspose(Snapshot(t), a, b));
  const Tensor twice = Ok(Transpose(once, a, b));
  RC_ASSERT(twice.shape() == t.shape());
  RC_ASSERT(twice.strides() == t.strides());
  RC_ASSERT(twice.layout().offset() == t.layout().offset());
  RC_ASSERT(twice.SharesStorageWith(t));
  RC_ASSERT(Snapshot(twice) == Snapshot(t));
}

void ContiguousPreservesElements() {
  const Tensor t = Build(GenAnyTensorSpec());
  const Tensor c = Ok(Contiguous(t));
  RC_ASSERT(c.is_contiguous());
  RC_ASSERT(Snapshot(c) == Snapshot(t));
  RC_ASSERT(c.ToBits() == t.ToBits());  // the fused fast path agrees with the index loop
  RC_ASSERT(c.SharesStorageWith(t) == t.is_contiguous());
  RC_CLASSIFY(t.is_contiguous(), "already contiguous");
}

void ReshapePreservesRowMajorOrder() {
  const Tensor t = Build(GenAnyTensorSpec(1, 1));
  // A new shape for the same count: factor the count into random parts.
  int64_t remaining = t.num_elements();
  std::vector<int64_t> shape;
  while (remaining > 1 && shape.size() < 4) {
    std::vector<int64_t> divisors;
    for (int64_t d = 2; d <= remaining; ++d) {
      if (remaining % d == 0) divisors.push_back(d);
    }
    const int64_t d = *rc::gen::elementOf(divisors);
    shape.push_back(d);
    remaining /= d;
  }
  if (remaining > 1) shape.back() *= remaining;
  if (*rc::gen::arbitrary<bool>()) shape.insert(shape.begin(), 1);
  const Tensor r = Ok(Reshape(t, shape));
  RC_ASSERT(Snapshot(r).bits == Snapshot(t).bits);
  RC_ASSERT(r.shape() == Dims(shape.begin(), shape.end()));
  RC_CLASSIFY(r.SharesStorageWith(t), "view");
  RC_CLASSIFY(!r.SharesStorageWith(t), "copy");
}

void SliceSetWritesExactlyItsTarget() {
  const DType dtype = *GenDType();
  const std::vector<int64_t> shape = *GenShape(1, 4, 1, 5);
  const int dim = *Uniform(0, static_cast<int>(shape.size()));
  const Tensor dst = Build(*GenTensorSpec(dtype, shape, Values::kAny, LayoutKind::kAny));
  std::vector<int64_t> src_shape = shape;
  src_shape[dim] = *Uniform<int64_t>(0, shape[dim] + 1);
  const int64_t offset = *Uniform<int64_t>(0, shape[dim] - src_shape[dim] + 1);
  const Tensor src = Build(*GenTensorSpec(dtype, src_shape, Values::kAny, LayoutKind::kAny));
  const std::vector<uint8_t> before = StorageBytes(dst);
  DenseTensor expected = Snapshot(dst);
  ModelSliceSet(expected, Snapshot(src), dim, offset);
  RC_ASSERT(SliceSet(dst, src, dim, offset).ok());
  RC_ASSERT(Snapshot(dst) == expected);
  // Nothing outside the target region of the storage changed (padding included).
  const Tensor target = Ok(Narrow(dst, dim, offset, src_shape[dim]));
  std::vector<bool> in_target(dst.storage()->num_elements(), false);
  ForEachIndex(std::vector<int64_t>(target.shape().begin(), target.shape().end()),
               [&](const std::vector<int64_t>& index) {
                 in_target[target.layout().OffsetOf(index)] = true;
               });
  const std::vector<uint8_t> after = StorageBytes(dst);
  const int size = DTypeSize(dtype);
  for (size_t e = 0; e < in_target.size(); ++e) {
    if (in_target[e]) continue;
    RC_ASSERT(std::memcmp(&before[e * size], &after[e * size], size) == 0);
  }
  RC_CLASSIFY(!src.is_contiguous(), "strided source");
  RC_CLASSIFY(!dst.is_contiguous(), "strided destination");
}

void ViewsSeeWritesThroughSharedStorage() {
  const Tensor t = Build(GenAnyTensorSpec(2, 1));
  const Tensor copy = t.DeepCopy();
  const int a = *Uniform(0, t.rank());
  const int b = *Uniform(0, t.rank());
  // view = narrow(transpose(t, a, b), dim, start, rest of dim).
  const Tensor transposed = Ok(Transpose(t, a, b));
  const int dim = *Uniform(0, t.rank());
  const int64_t start = *Uniform<int64_t>(0, transposed.dim(dim));
  const Tensor view = Ok(Narrow(transposed, dim, start, transposed.dim(dim) - start));
  std::vector<int64_t> index;
  for (int d = 0; d < view.rank(); ++d) index.push_back(*Uniform<int64_t>(0, view.dim(d)));
  // The same element through t: undo the narrow, then the transpose.
  std::vector<int64_t> in_t = index;
  in_t[dim] += start;
  std::swap(in_t[a], in_t[b]);
  const uint32_t original = t.GetBits(in_t);
  const float value = *GenElement(t.dtype(), Values::kFinite);
  view.SetFloat(index, value);
  RC_ASSERT(t.GetBits(in_t) == view.GetBits(index));
  RC_ASSERT(t.GetFloat(in_t) == RoundToDType(value, t.dtype()));
  RC_ASSERT(copy.GetBits(in_t) == original);  // the deep copy does not share storage
}

void CastRoundsLikeTheDType() {
  const TensorSpec spec = GenAnyTensorSpec();
  const Tensor t = Build(spec);
  const DType target = *GenDType();
  const Tensor c = Ok(Cast(t, target));
  RC_ASSERT(c.dtype() == target);
  const std::vector<float> from = t.ToFloats();
  const std::vector<float> to = c.ToFloats();
  for (size_t i = 0; i < from.size(); ++i) {
    const float expected = RoundToDType(from[i], target);
    RC_ASSERT((std::isnan(expected) && std::isnan(to[i])) || expected == to[i]);
  }
}

void BadArgumentsFailAndChangeNothing() {
  const Tensor t = Build(GenAnyTensorSpec(1, 1));
  const std::vector<uint8_t> before = StorageBytes(t);
  const int rank = t.rank();
  const int choice = *Uniform(0, 9);
  absl::StatusCode code = absl::StatusCode::kOk;
  absl::StatusCode expected = absl::StatusCode::kInvalidArgument;
  switch (choice) {
    case 0:  // dimension index out of range
      code = Narrow(t, *rc::gen::element(-1, rank, rank + 5), 0, 0).status().code();
      break;
    case 1: {  // window past the end
      const int dim = *Uniform(0, rank);
      code = Narrow(t, dim, *Uniform<int64_t>(1, 4), t.dim(dim)).status().code();
      expected = absl::StatusCode::kOutOfRange;
      break;
    }
    case 2:  // overflowing start + length
      code = Narrow(t, 0, INT64_MAX - 1, 5).status().code();
      expected = absl::StatusCode::kOutOfRange;
      break;
    case 3:
      code = Transpose(t, 0, *rc::gen::element(-1, rank)).status().code();
      break;
    case 4: {  // slice_set of the wrong dtype
      const DType other = t.dtype() == DType::kF32 ? DType::kBF16 : DType::kF32;
      code = SliceSet(t, Ok(Tensor::Zeros(other, t.shape())), 0, 0).code();
      break;
    }
    case 5: {  // slice_set past the end along dim
      const int dim = *Uniform(0, rank);
      code = SliceSet(t, t.DeepCopy(), dim, *Uniform<int64_t>(1, 3)).code();
      expected = absl::StatusCode::kOutOfRange;
      break;
    }
    case 6: {  // slice_set with a different size in another dimension
      Dims shape = t.shape();
      const int dim = *Uniform(0, rank);
      const int other = (dim + 1) % rank;
      if (other == dim) {
        shape.push_back(1);  // rank 1: a rank mismatch instead
      } else {
        shape[other] += 1;
      }
      code = SliceSet(t, Ok(Tensor::Zeros(t.dtype(), shape)), dim, 0).code();
      break;
    }
    case 7:  // cat with mismatched rank
      code = Cat({t, Ok(Tensor::Zeros(t.dtype(), {1, 1, 1, 1, 1}))}, 0).status().code();
      break;
    default:  // reshape to a different count
      code = Reshape(t, {t.num_elements() + 1}).status().code();
      break;
  }
  RC_TAG(choice);
  RC_ASSERT(code == expected);
  RC_ASSERT(StorageBytes(t) == before);
}

}  // namespace

std::vector<PropertySpec> TensorProperties() {
  return {
      {"tensor/narrow_matches_model", 400, NarrowMatchesModel},
      {"tensor/narrow_cat_round_trip", 400, NarrowCatRoundTrip},
      {"tensor/cat_matches_model", 400, CatMatchesModel},
      {"tensor/transpose_twice_is_identity", 400, TransposeTwiceIsIdentity},
      {"tensor/contiguous_preserves_elements", 400, ContiguousPreservesElements},
      {"tensor/reshape_preserves_row_major_order", 400, ReshapePreservesRowMajorOrder},
      {"tensor/slice_set_writes_exactly_its_target", 600, SliceSetWritesExactlyItsTarget},
      {"tensor/views_see_writes_through_shared_storage", 400, ViewsSeeWritesThroughSharedStorage},
      {"tensor/cast_rounds_like_the_dtype", 400, CastRoundsLikeTheDType},
      {"tensor/bad_arguments_fail_and_change_nothing", 600, BadArgumentsFailAndChangeNothing},
  };
}

}  // namespace kvcheck::properties
