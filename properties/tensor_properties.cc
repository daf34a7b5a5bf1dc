#include "properties/tensor_properties.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/dense_model.h"
#include "properties/generators.h"
#include "properties/hostile_tensor_properties.h"
#include "properties/tensor_checks.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/dtype.h"
#include "src/tensor/tensor.h"
#include "src/tensor/view_ops.h"

// Every property draws all of its values first (in the parent: RapidCheck records the draws to
// shrink them) and then runs one RunIsolated check that builds the tensors from their specs,
// calls the ops and asserts (in a forked child: a crash is a failing, shrunk case). Values a
// check needs from a tensor's shape come from the spec, never from a built tensor. Draws are
// labelled structs, so a counterexample reads "dim 2, start 3, length 1", not "2 3 1".
//
// The shared generators, names and checks are in tensor_checks.h; the hostile-size properties
// in hostile_tensor_properties.cc.

namespace kvcheck::properties {
namespace {

// ----- tensor/narrow_matches_model

void NarrowMatchesModel() {
  const TensorSpec spec = *GenAnyTensorSpec();
  const NarrowArgs a = *GenNarrowArgs(spec.shape);
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const Tensor n = Ok(Narrow(t, a.dim, a.start, a.length));
    RC_ASSERT(Snapshot(n) == ModelNarrow(Snapshot(t), a.dim, a.start, a.length));
    RC_ASSERT(n.SharesStorageWith(t));
  });
  RC_CLASSIFY(a.length == spec.shape[a.dim], "full extent");
  RC_CLASSIFY(a.length == 0, "empty");
}

// ----- tensor/narrow_cat_round_trip, tensor/cat_matches_model

struct CutPoints {
  int dim = 0;
  std::vector<int64_t> cuts;  // sorted, from 0 to the size of dim (repeats: empty pieces)
};
void showValue(const CutPoints& c, std::ostream& os) {
  os << "along dim " << c.dim << " at [" << absl::StrJoin(c.cuts, ", ") << "]";
}

void NarrowCatRoundTrip() {
  const TensorSpec spec = *GenAnyTensorSpec();
  const CutPoints c = *rc::gen::exec([shape = spec.shape] {
    CutPoints c;
    c.dim = *Uniform(0, static_cast<int>(shape.size()));
    c.cuts = *rc::gen::container<std::vector<int64_t>>(*Uniform(0, 4),
                                                       Uniform<int64_t>(0, shape[c.dim] + 1));
    std::sort(c.cuts.begin(), c.cuts.end());
    c.cuts.insert(c.cuts.begin(), 0);
    c.cuts.push_back(shape[c.dim]);
    return c;
  });
  RunIsolated([&] {
    const Tensor t = Build(spec);
    std::vector<Tensor> pieces;
    for (size_t i = 0; i + 1 < c.cuts.size(); ++i) {
      pieces.push_back(Ok(Narrow(t, c.dim, c.cuts[i], c.cuts[i + 1] - c.cuts[i])));
    }
    const Tensor joined = Ok(Cat(pieces, c.dim));
    RC_ASSERT(Snapshot(joined) == Snapshot(t));
    RC_ASSERT(joined.is_contiguous());
    RC_ASSERT(!joined.SharesStorageWith(t));
    // And back: narrowing the joined tensor gives each piece.
    for (size_t i = 0; i + 1 < c.cuts.size(); ++i) {
      RC_ASSERT(Snapshot(Ok(Narrow(joined, c.dim, c.cuts[i], c.cuts[i + 1] - c.cuts[i]))) ==
                Snapshot(pieces[i]));
    }
  });
  RC_CLASSIFY(c.cuts.size() > 3, "3+ pieces");
}

void CatMatchesModel() {
  const CatParts c = *GenCatParts();
  RunIsolated([&] {
    std::vector<Tensor> parts;
    std::vector<DenseTensor> models;
    for (const TensorSpec& spec : c.parts) {
      parts.push_back(Build(spec));
      models.push_back(Snapshot(parts.back()));
    }
    RC_ASSERT(Snapshot(Ok(Cat(parts, c.dim))) == ModelCat(models, c.dim));
  });
}

// ----- tensor/transpose_twice_is_identity, tensor/contiguous_preserves_elements,
// tensor/reshape_preserves_row_major_order

struct DimPair {
  int a = 0, b = 0;
};
void showValue(const DimPair& p, std::ostream& os) { os << "dims " << p.a << " and " << p.b; }

void TransposeTwiceIsIdentity() {
  const TensorSpec spec = *GenAnyTensorSpec();
  const int rank = static_cast<int>(spec.shape.size());
  const DimPair p = *rc::gen::build<DimPair>(rc::gen::set(&DimPair::a, Uniform(0, rank)),
                                             rc::gen::set(&DimPair::b, Uniform(0, rank)));
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const Tensor once = Ok(Transpose(t, p.a, p.b));
    RC_ASSERT(Snapshot(once) == ModelTranspose(Snapshot(t), p.a, p.b));
    const Tensor twice = Ok(Transpose(once, p.a, p.b));
    RC_ASSERT(twice.shape() == t.shape());
    RC_ASSERT(twice.strides() == t.strides());
    RC_ASSERT(twice.layout().offset() == t.layout().offset());
    RC_ASSERT(twice.SharesStorageWith(t));
    RC_ASSERT(Snapshot(twice) == Snapshot(t));
  });
}

// ----- tensor/permute_matches_model

struct PermuteArgs {
  NarrowArgs narrow;  // applied first: an offset view made by Narrow, not by Build's layout
  std::vector<int> order;
};
void showValue(const PermuteArgs& p, std::ostream& os) {
  os << "permute(narrow(t, dim " << p.narrow.dim << ", from " << p.narrow.start << ", length "
     << p.narrow.length << "), order [" << absl::StrJoin(p.order, ", ") << "])";
}

void PermuteMatchesModel() {
  // Any layout, offset views included: a permuted view starts where its input does. (Build
  // itself permutes a narrowed buffer, so a Permute that lost the offset would build a wrong
  // but self-consistent tensor: the narrow below makes an offset that Build did not make.)
  const TensorSpec spec = *GenAnyTensorSpec();
  const PermuteArgs p = *rc::gen::exec([shape = spec.shape] {
    PermuteArgs p;
    p.narrow = *GenNarrowArgs(shape);
    p.order = *GenPermutation(static_cast<int>(shape.size()));
    return p;
  });
  RunIsolated([&] {
    const Tensor t = Ok(Narrow(Build(spec), p.narrow.dim, p.narrow.start, p.narrow.length));
    const Tensor permuted = Ok(Permute(t, p.order));
    RC_ASSERT(Snapshot(permuted) == ModelPermute(Snapshot(t), p.order));
    RC_ASSERT(permuted.layout().offset() == t.layout().offset());
    RC_ASSERT(permuted.SharesStorageWith(t));
    for (size_t i = 0; i < p.order.size(); ++i) {
      RC_ASSERT(permuted.strides()[i] == t.strides()[p.order[i]]);
    }
  });
}

void ContiguousPreservesElements() {
  const TensorSpec spec = *GenAnyTensorSpec();
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const Tensor c = Ok(Contiguous(t));
    RC_ASSERT(c.is_contiguous());
    RC_ASSERT(Snapshot(c) == Snapshot(t));
    RC_ASSERT(c.ToBits() == t.ToBits());  // the fused fast path agrees with the index loop
    RC_ASSERT(c.SharesStorageWith(t) == t.is_contiguous());
    RC_CLASSIFY(t.is_contiguous(), "already contiguous");
  });
}

struct ReshapeTarget {
  std::vector<int64_t> shape;
};
void showValue(const ReshapeTarget& r, std::ostream& os) {
  os << "to [" << absl::StrJoin(r.shape, ", ") << "]";
}

void ReshapePreservesRowMajorOrder() {
  const TensorSpec spec = *GenAnyTensorSpec(1, 1);
  // A new shape for the same count: factor the count into random parts.
  const ReshapeTarget target = *rc::gen::exec([count = Count(spec.shape)] {
    int64_t remaining = count;
    std::vector<int64_t> shape;
    while (remaining > 1 && shape.size() < 4) {
      std::vector<int64_t> divisors;
      for (int64_t d = 2; d <= remaining; ++d) {
        if (remaining % d == 0) divisors.push_back(d);
      }
      const int64_t d = *ChoiceOf(divisors);
      shape.push_back(d);
      remaining /= d;
    }
    if (remaining > 1) shape.back() *= remaining;
    if (*rc::gen::arbitrary<bool>()) shape.insert(shape.begin(), 1);
    return ReshapeTarget{shape};
  });
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const Tensor r = Ok(Reshape(t, target.shape));
    RC_ASSERT(Snapshot(r).bits == Snapshot(t).bits);
    RC_ASSERT(r.shape() == Dims(target.shape.begin(), target.shape.end()));
    RC_CLASSIFY(r.SharesStorageWith(t), "view");
    RC_CLASSIFY(!r.SharesStorageWith(t), "copy");
  });
}

// ----- tensor/slice_set_writes_exactly_its_target

void SliceSetWritesExactlyItsTarget() {
  const SliceSetCase c = *GenSliceSetCase();
  RunIsolated([&] {
    const Tensor dst = Build(c.dst), src = Build(c.src);
    const std::vector<uint8_t> before = StorageBytes(dst);
    DenseTensor expected = Snapshot(dst);
    ModelSliceSet(expected, Snapshot(src), c.dim, c.offset);
    RC_ASSERT(SliceSet(dst, src, c.dim, c.offset).ok());
    RC_ASSERT(Snapshot(dst) == expected);
    // Nothing outside the target region of the storage changed (padding included).
    const Tensor target = Ok(Narrow(dst, c.dim, c.offset, c.src.shape[c.dim]));
    std::vector<bool> in_target(dst.storage()->num_elements(), false);
    ForEachIndex(AsVector(target.shape()), [&](const std::vector<int64_t>& index) {
      in_target[target.layout().OffsetOf(index)] = true;
    });
    const std::vector<uint8_t> after = StorageBytes(dst);
    const int size = DTypeSize(dst.dtype());
    for (size_t e = 0; e < in_target.size(); ++e) {
      if (in_target[e]) continue;
      RC_ASSERT(std::memcmp(&before[e * size], &after[e * size], size) == 0);
    }
    RC_CLASSIFY(!src.is_contiguous(), "strided source");
    RC_CLASSIFY(!dst.is_contiguous(), "strided destination");
  });
}

// ----- tensor/copies_between_overlapping_views

// src = narrow(t, dim, from, length), dst = narrow(t, dim, to, length), both then transposed
// by (a, b) when `transposed`; dst = src by CopyInto, or the same region by SliceSet(t, src).
struct OverlapCopy {
  int dim = 0;
  int64_t from = 0, to = 0, length = 0;
  bool transposed = false;
  int a = 0, b = 0;
  bool slice_set = false;
};
void showValue(const OverlapCopy& c, std::ostream& os) {
  const auto narrow = [&](int64_t start) {
    return absl::StrCat("narrow(t, dim ", c.dim, ", from ", start, ", length ", c.length, ")");
  };
  if (c.slice_set) {
    os << "SliceSet(t, " << narrow(c.from) << ", dim " << c.dim << ", offset " << c.to << ")";
  } else {
    os << "CopyInto(" << narrow(c.to) << ", " << narrow(c.from) << ")";
    if (c.transposed) os << ", both views transposed (" << c.a << ", " << c.b << ")";
  }
}

void CopiesBetweenOverlappingViews() {
  // Source and destination in one storage, overlapping or not, in either order: the copy
  // must read every source element before it writes over it.
  const TensorSpec spec = *GenAnyTensorSpec(1, 1);
  const OverlapCopy c = *rc::gen::exec([shape = spec.shape] {
    OverlapCopy c;
    const int rank = static_cast<int>(shape.size());
    c.dim = *Uniform(0, rank);
    c.length = *Uniform<int64_t>(1, shape[c.dim] + 1);
    c.from = *Uniform<int64_t>(0, shape[c.dim] - c.length + 1);
    c.to = *Uniform<int64_t>(0, shape[c.dim] - c.length + 1);
    c.slice_set = *rc::gen::arbitrary<bool>();
    c.transposed = !c.slice_set && *rc::gen::arbitrary<bool>();
    if (c.transposed) {
      c.a = *Uniform(0, rank);
      c.b = *Uniform(0, rank);
    }
    return c;
  });
  RunIsolated([&] {
    const Tensor t = Build(spec);
    Tensor src = Ok(Narrow(t, c.dim, c.from, c.length));
    Tensor dst = Ok(Narrow(t, c.dim, c.to, c.length));
    DenseTensor expected = Snapshot(t);
    ModelSliceSet(expected, Snapshot(src), c.dim, c.to);
    if (c.transposed) {
      src = Ok(Transpose(src, c.a, c.b));
      dst = Ok(Transpose(dst, c.a, c.b));
    }
    const DenseTensor source = Snapshot(src);
    RC_ASSERT((c.slice_set ? SliceSet(t, src, c.dim, c.to) : CopyInto(dst, src)).ok());
    RC_ASSERT(Snapshot(dst) == source);
    RC_ASSERT(Snapshot(t) == expected);
  });
  const bool overlap = std::max(c.from, c.to) < std::min(c.from, c.to) + c.length;
  RC_CLASSIFY(overlap && c.from != c.to, "overlapping, shifted");
  RC_CLASSIFY(c.from == c.to, "onto itself");
}

// ----- tensor/views_see_writes_through_shared_storage

// view = narrow(transpose(t, a, b), dim, start, rest of dim); `value` is written at `index`.
struct WriteThroughView {
  int a = 0, b = 0, dim = 0;
  int64_t start = 0;
  std::vector<int64_t> index;
  float value = 0;
};
void showValue(const WriteThroughView& w, std::ostream& os) {
  os << "transpose(" << w.a << ", " << w.b << "), narrow(dim " << w.dim << ", from " << w.start
     << "), write " << w.value << " at [" << absl::StrJoin(w.index, ", ") << "]";
}

void ViewsSeeWritesThroughSharedStorage() {
  const TensorSpec spec = *GenAnyTensorSpec(2, 1);
  const WriteThroughView w = *rc::gen::exec([spec] {
    WriteThroughView w;
    const int rank = static_cast<int>(spec.shape.size());
    w.a = *Uniform(0, rank);
    w.b = *Uniform(0, rank);
    std::vector<int64_t> view_shape = spec.shape;  // the transposed shape, then narrowed
    std::swap(view_shape[w.a], view_shape[w.b]);
    w.dim = *Uniform(0, rank);
    w.start = *Uniform<int64_t>(0, view_shape[w.dim]);
    view_shape[w.dim] -= w.start;
    for (int64_t size : view_shape) w.index.push_back(*Uniform<int64_t>(0, size));
    w.value = *GenElement(spec.dtype, Values::kFinite);
    return w;
  });
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const Tensor copy = t.DeepCopy();
    const Tensor transposed = Ok(Transpose(t, w.a, w.b));
    const Tensor view = Ok(Narrow(transposed, w.dim, w.start, transposed.dim(w.dim) - w.start));
    // The same element through t: undo the narrow, then the transpose.
    std::vector<int64_t> in_t = w.index;
    in_t[w.dim] += w.start;
    std::swap(in_t[w.a], in_t[w.b]);
    const uint32_t original = t.GetBits(in_t);
    view.SetFloat(w.index, w.value);
    RC_ASSERT(t.GetBits(in_t) == view.GetBits(w.index));
    RC_ASSERT(t.GetFloat(in_t) == RoundToDType(w.value, t.dtype()));
    RC_ASSERT(copy.GetBits(in_t) == original);  // the deep copy does not share storage
  });
}

// ----- tensor/cast_rounds_like_the_dtype

struct CastTarget {
  DType dtype = DType::kF32;
};
void showValue(const CastTarget& c, std::ostream& os) { os << "to " << DTypeName(c.dtype); }

void CastRoundsLikeTheDType() {
  const TensorSpec spec = *GenAnyTensorSpec();
  const CastTarget target = *rc::gen::map(GenDType(), [](DType d) { return CastTarget{d}; });
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const Tensor c = Ok(Cast(t, target.dtype));
    RC_ASSERT(c.dtype() == target.dtype);
    const std::vector<float> from = t.ToFloats();
    const std::vector<float> to = c.ToFloats();
    for (size_t i = 0; i < from.size(); ++i) {
      const float expected = RoundToDType(from[i], target.dtype);
      RC_ASSERT((std::isnan(expected) && std::isnan(to[i])) || expected == to[i]);
    }
  });
}

// ----- tensor/bad_arguments_fail_and_change_nothing

struct BadCall {
  int choice = 0;
  int dim = 0;         // the dimension index the call gets
  int64_t amount = 0;  // a start or an offset
};
void showValue(const BadCall& c, std::ostream& os) {
  switch (c.choice) {
    case 0:
      os << "narrow with dimension index " << c.dim;
      break;
    case 1:
      os << "narrow(dim " << c.dim << ", start " << c.amount << ", length: all)";
      break;
    case 2:
      os << "narrow(dim 0, start INT64_MAX - 1, length 5)";
      break;
    case 3:
      os << "transpose(0, " << c.dim << ")";
      break;
    case 4:
      os << "slice_set of a source of another dtype";
      break;
    case 5:
      os << "slice_set(dim " << c.dim << ", offset " << c.amount << ") of a full copy";
      break;
    case 6:
      os << "slice_set along dim " << c.dim << ", the next dim one longer";
      break;
    case 7:
      os << "cat with a rank-5 tensor";
      break;
    default:
      os << "reshape to one element more";
      break;
  }
}

void BadArgumentsFailAndChangeNothing() {
  const TensorSpec spec = *GenAnyTensorSpec(1, 1);
  const int rank = static_cast<int>(spec.shape.size());
  const BadCall call = *rc::gen::exec([rank] {
    BadCall c;
    c.choice = *Uniform(0, 9);
    if (c.choice == 0) c.dim = *Choice(-1, rank, rank + 5);
    if (c.choice == 1 || c.choice == 5 || c.choice == 6) c.dim = *Uniform(0, rank);
    if (c.choice == 1) c.amount = *Uniform<int64_t>(1, 4);
    if (c.choice == 3) c.dim = *Choice(-1, rank);
    if (c.choice == 5) c.amount = *Uniform<int64_t>(1, 3);
    return c;
  });
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const std::vector<uint8_t> before = StorageBytes(t);
    absl::StatusCode code = absl::StatusCode::kOk;
    absl::StatusCode expected = absl::StatusCode::kInvalidArgument;
    switch (call.choice) {
      case 0:  // dimension index out of range
        code = Narrow(t, call.dim, 0, 0).status().code();
        break;
      case 1:  // window past the end
        code = Narrow(t, call.dim, call.amount, spec.shape[call.dim]).status().code();
        expected = absl::StatusCode::kOutOfRange;
        break;
      case 2:  // overflowing start + length
        code = Narrow(t, 0, INT64_MAX - 1, 5).status().code();
        expected = absl::StatusCode::kOutOfRange;
        break;
      case 3:
        code = Transpose(t, 0, call.dim).status().code();
        break;
      case 4: {  // slice_set of the wrong dtype
        const DType other = t.dtype() == DType::kF32 ? DType::kBF16 : DType::kF32;
        code = SliceSet(t, Ok(Tensor::Zeros(other, t.shape())), 0, 0).code();
        break;
      }
      case 5:  // slice_set past the end along dim
        code = SliceSet(t, t.DeepCopy(), call.dim, call.amount).code();
        expected = absl::StatusCode::kOutOfRange;
        break;
      case 6: {  // slice_set with a different size in another dimension
        std::vector<int64_t> shape = spec.shape;
        const int other = (call.dim + 1) % rank;
        if (other == call.dim) {
          shape.push_back(1);  // rank 1: a rank mismatch instead
        } else {
          shape[other] += 1;
        }
        code = SliceSet(t, Ok(Tensor::Zeros(t.dtype(), shape)), call.dim, 0).code();
        break;
      }
      case 7:  // cat with mismatched rank
        code = Cat({t, Ok(Tensor::Zeros(t.dtype(), {1, 1, 1, 1, 1}))}, 0).status().code();
        break;
      default:  // reshape to a different count
        code = Reshape(t, {Count(spec.shape) + 1}).status().code();
        break;
    }
    RC_ASSERT(code == expected);
    RC_ASSERT(StorageBytes(t) == before);
  });
  RC_TAG(call.choice);
}

}  // namespace

std::vector<PropertySpec> TensorProperties() {
  std::vector<PropertySpec> properties = {
      {"tensor/narrow_matches_model", 400, NarrowMatchesModel},
      {"tensor/narrow_cat_round_trip", 400, NarrowCatRoundTrip},
      {"tensor/cat_matches_model", 400, CatMatchesModel},
      {"tensor/transpose_twice_is_identity", 400, TransposeTwiceIsIdentity},
      {"tensor/permute_matches_model", 400, PermuteMatchesModel},
      {"tensor/contiguous_preserves_elements", 400, ContiguousPreservesElements},
      {"tensor/reshape_preserves_row_major_order", 400, ReshapePreservesRowMajorOrder},
      {"tensor/slice_set_writes_exactly_its_target", 600, SliceSetWritesExactlyItsTarget},
      {"tensor/copies_between_overlapping_views", 400, CopiesBetweenOverlappingViews},
      {"tensor/views_see_writes_through_shared_storage", 400, ViewsSeeWritesThroughSharedStorage},
      {"tensor/cast_rounds_like_the_dtype", 400, CastRoundsLikeTheDType},
      {"tensor/bad_arguments_fail_and_change_nothing", 600, BadArgumentsFailAndChangeNothing},
  };
  for (PropertySpec& spec : HostileTensorProperties()) properties.push_back(std::move(spec));
  return properties;
}

}  // namespace kvcheck::properties
