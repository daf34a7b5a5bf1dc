#include "properties/tensor_properties.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/dense_model.h"
#include "properties/generators.h"
#include "properties/size_oracle.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/storage.h"
#include "src/tensor/view_ops.h"

// Every property draws all of its values first (in the parent: RapidCheck records the draws to
// shrink them) and then runs one RunIsolated check that builds the tensors from their specs,
// calls the ops and asserts (in a forked child: a crash is a failing, shrunk case). Values a
// check needs from a tensor's shape come from the spec, never from a built tensor. Draws are
// labelled structs, so a counterexample reads "dim 2, start 3, length 1", not "2 3 1".

namespace kvcheck::properties {
namespace {

using Int128 = __int128;

// ----- Names for counterexamples.

// 2147483648 -> "2^31", 4294967295 -> "2^32-1": hostile sizes are read by people.
std::string SizeName(int64_t v) {
  if (v == INT64_MAX) return "INT64_MAX";
  if (v == INT64_MIN) return "INT64_MIN";
  const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const char* sign = v < 0 ? "-" : "";
  if (magnitude >= (1 << 16) && std::has_single_bit(magnitude)) {
    return absl::StrCat(sign, "2^", std::countr_zero(magnitude));
  }
  if (magnitude >= (1 << 16) && std::has_single_bit(magnitude + 1)) {
    return absl::StrCat(sign, "(2^", std::countr_zero(magnitude + 1), "-1)");
  }
  return absl::StrCat(v);
}

std::string SizesName(const std::vector<int64_t>& values) {
  std::vector<std::string> names;
  for (int64_t v : values) names.push_back(SizeName(v));
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

// ----- Generators (run in the parent).

int64_t Count(const std::vector<int64_t>& small_shape) {
  return std::accumulate(small_shape.begin(), small_shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

// A tensor of rank min_rank..4, dims min_dim..5, any dtype, any layout, values incl. NaN/inf.
// One draw (TensorSpec prints its dtype, shape and layout).
rc::Gen<TensorSpec> GenAnyTensorSpec(int min_rank = 1, int64_t min_dim = 0) {
  return rc::gen::exec([min_rank, min_dim] {
    const DType dtype = *GenDType();
    return *GenTensorSpec(dtype, *GenShape(min_rank, 4, min_dim, 5), Values::kAny,
                          LayoutKind::kAny);
  });
}

// A permutation of [0, rank) from random sort keys; keys shrink to 0, the identity order.
rc::Gen<std::vector<int>> GenPermutation(int rank) {
  return rc::gen::map(rc::gen::container<std::vector<int>>(rank, Uniform(0, 100)),
                      [rank](const std::vector<int>& keys) {
                        std::vector<int> order(rank);
                        std::iota(order.begin(), order.end(), 0);
                        std::stable_sort(order.begin(), order.end(),
                                         [&](int a, int b) { return keys[a] < keys[b]; });
                        return order;
                      });
}

// Hostile integers: mostly typical (in [0, typical_max]), sometimes a small negative (a size_t
// that wrapped), an edge of kHostileEdges (2^31 - 1, 2^31, 2^32, 2^62, INT64_MIN / MAX, ...)
// or any int64_t. The category is drawn first as an integer, which shrinks towards "typical"
// (RapidCheck's oneOf / elementOf never shrink their choice), then the value within it.
rc::Gen<int64_t> GenHostileInt(int64_t typical_max) {
  return rc::gen::mapcat(Uniform(0, 20), [typical_max](int category) -> rc::Gen<int64_t> {
    if (category < 13) {
      return rc::gen::map(Uniform<uint64_t>(0, static_cast<uint64_t>(typical_max) + 1),
                          [](uint64_t v) { return static_cast<int64_t>(v); });
    }
    if (category < 15) return rc::gen::map(Uniform<int64_t>(1, 5), [](int64_t v) { return -v; });
    if (category < 19) {
      // By magnitude, so that an edge shrinks towards the smallest edge.
      static const std::vector<int64_t> edges = [] {
        std::vector<int64_t> sorted(std::begin(kHostileEdges), std::end(kHostileEdges));
        auto magnitude = [](int64_t v) {
          return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
        };
        std::stable_sort(sorted.begin(), sorted.end(),
                         [&](int64_t a, int64_t b) { return magnitude(a) < magnitude(b); });
        return sorted;
      }();
      return rc::gen::map(Uniform<size_t>(0, edges.size()), [](size_t i) { return edges[i]; });
    }
    return rc::gen::arbitrary<int64_t>();
  });
}

// A dimension index: usually valid, sometimes -1, rank, or INT_MIN / INT_MAX.
rc::Gen<int> GenHostileDim(int rank) {
  return rc::gen::mapcat(Uniform(0, 8), [rank](int category) -> rc::Gen<int> {
    if (category < 5) return rank == 0 ? rc::gen::just(0) : Uniform(0, rank);
    if (category == 5) return rc::gen::just(-1);
    if (category == 6) return rc::gen::just(rank);
    return rc::gen::element(INT_MAX, INT_MIN);
  });
}

// A dimension of a huge tensor: small (shrinks to these) or past 2^31.
rc::Gen<int64_t> GenHugeDim() {
  static const std::vector<int64_t> huge = {(int64_t{1} << 31) - 1, int64_t{1} << 31,
                                            int64_t{1} << 32,       int64_t{1} << 40,
                                            int64_t{1} << 62,       INT64_MAX};
  return rc::gen::mapcat(Uniform(0, 2), [](int category) -> rc::Gen<int64_t> {
    if (category == 0) return Uniform<int64_t>(1, 6);
    return rc::gen::map(Uniform<size_t>(0, huge.size()), [](size_t i) { return huge[i]; });
  });
}

// ----- Checks (run in the isolated child).

constexpr int64_t kMaxCheckedElements = 4096;  // element-wise comparison up to this many
constexpr int64_t kCaseStorageLimit = int64_t{1} << 20;

// The storage limit during a hostile-size check. The default (8 GiB) admits 2^31 f32
// elements, so a result just past 2^31 elements would really be allocated; 1 MiB sends every
// such result down the same error path of Storage::Allocate without needing the memory.
class ScopedStorageLimit {
 public:
  explicit ScopedStorageLimit(int64_t bytes) : previous_(MaxStorageBytes()) {
    SetMaxStorageBytes(bytes);
  }
  ~ScopedStorageLimit() { SetMaxStorageBytes(previous_); }

 private:
  int64_t previous_;
};

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

void AssertStatus(const absl::Status& status, Expect expect, const char* op) {
  if (std::optional<std::string> mismatch = StatusMismatch(status, expect, op)) RC_FAIL(*mismatch);
}

// "Cat: INVALID_ARGUMENT" in the distribution: shows that every outcome was reached.
void TagOutcome(const char* op, const absl::Status& status) {
  RC_TAG(absl::StrCat(op, ": ", absl::StatusCodeToString(status.code())));
}

std::vector<uint8_t> StorageBytes(const Tensor& t) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(t.storage()->bytes());
  return std::vector<uint8_t>(bytes, bytes + t.storage()->num_bytes());
}

std::vector<int64_t> AsVector(const Dims& dims) { return {dims.begin(), dims.end()}; }

// The layout's fields are `shape`, `strides` and (when given) `offset`, and its derived sizes
// and contiguity agree with exact arithmetic.
void CheckLayoutIs(const Layout& layout, const std::vector<int64_t>& shape,
                   const std::optional<std::vector<int64_t>>& strides,
                   std::optional<int64_t> offset) {
  const std::string shown = layout.DebugString();
  if (AsVector(layout.shape()) != shape) RC_FAIL(shown + ", expected shape " + SizesName(shape));
  if (strides && AsVector(layout.strides()) != *strides) {
    RC_FAIL(shown + ", expected strides " + SizesName(*strides));
  }
  if (offset && layout.offset() != *offset)
    RC_FAIL(shown + ", expected offset " + SizeName(*offset));
  const std::vector<int64_t> actual_strides = AsVector(layout.strides());
  const std::optional<int64_t> count = ExactCount(shape);
  RC_ASSERT(count.has_value());
  if (layout.num_elements() != *count) {
    RC_FAIL(absl::StrCat(shown, " counts ", layout.num_elements(), " elements, exactly ", *count));
  }
  const std::optional<int64_t> end = SpanEnd(shape, actual_strides, layout.offset());
  if (*count > 0 && (!end || layout.required_storage() != *end)) {
    RC_FAIL(absl::StrCat(shown, " requires ", layout.required_storage(), " storage elements"));
  }
  if (*count == 0 && layout.required_storage() != 0) RC_FAIL(shown + " is empty but needs storage");
  if (layout.is_contiguous() != ContiguousByRule(shape, actual_strides)) {
    RC_FAIL(absl::StrCat(shown, ": is_contiguous() is ", layout.is_contiguous(),
                         ", the rule of layout.h in exact arithmetic says the opposite"));
  }
}

// Every element of `t` (past kMaxCheckedElements: the first, last and middle index of every
// dimension, and the last index of each dimension alone) has the bits expected(index).
template <typename ExpectedFn>
void CheckElements(const Tensor& t, ExpectedFn&& expected) {
  const std::vector<int64_t> shape = AsVector(t.shape());
  if (t.num_elements() == 0) return;
  if (t.num_elements() <= kMaxCheckedElements) {
    std::vector<uint32_t> want;
    ForEachIndex(shape, [&](const std::vector<int64_t>& index) {
      want.push_back(expected(index));
      RC_ASSERT(t.GetBits(index) == want.back());
    });
    RC_ASSERT(t.ToBits() == want);  // the fused row loops agree with the index loop
    return;
  }
  std::vector<std::vector<int64_t>> probes(3, std::vector<int64_t>(shape.size()));
  for (size_t d = 0; d < shape.size(); ++d) {
    probes[1][d] = shape[d] - 1;
    probes[2][d] = shape[d] / 2;
    std::vector<int64_t> alone(shape.size(), 0);
    alone[d] = shape[d] - 1;
    probes.push_back(alone);
  }
  for (const std::vector<int64_t>& index : probes) RC_ASSERT(t.GetBits(index) == expected(index));
}

// Contiguous(t) against the exact oracle: t itself when contiguous by the rule, else a new
// row-major tensor with the same elements, or the exact error (storage.h's codes past the
// limit, kInvalidArgument when no contiguous layout of the shape exists).
void CheckContiguous(const Tensor& t) {
  const std::vector<int64_t> shape = AsVector(t.shape()), strides = AsVector(t.strides());
  const bool already = ContiguousByRule(shape, strides);
  const absl::StatusOr<Tensor> c = Contiguous(t);
  AssertStatus(c.status(), ContiguousExpect(shape, strides, t.dtype(), MaxStorageBytes()),
               "Contiguous");
  TagOutcome("Contiguous", c.status());
  if (!c.ok()) return;
  CheckLayoutIs(c->layout(), shape, already ? strides : *RowMajorStrides(shape),
                already ? t.layout().offset() : 0);
  RC_ASSERT(c->SharesStorageWith(t) == already);
  CheckElements(*c, [&](const std::vector<int64_t>& index) { return t.GetBits(index); });
}

// ----- tensor/narrow_matches_model and tensor/narrow_with_hostile_arguments

struct NarrowArgs {
  int dim = 0;
  int64_t start = 0, length = 0;
};
void showValue(const NarrowArgs& a, std::ostream& os) {
  os << "dim " << a.dim << ", start " << SizeName(a.start) << ", length " << SizeName(a.length);
}

void NarrowMatchesModel() {
  const TensorSpec spec = *GenAnyTensorSpec();
  const NarrowArgs a = *rc::gen::exec([shape = spec.shape] {
    NarrowArgs a;
    a.dim = *Uniform(0, static_cast<int>(shape.size()));
    a.start = *Uniform<int64_t>(0, shape[a.dim] + 1);
    a.length = *Uniform<int64_t>(0, shape[a.dim] - a.start + 1);
    return a;
  });
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const Tensor n = Ok(Narrow(t, a.dim, a.start, a.length));
    RC_ASSERT(Snapshot(n) == ModelNarrow(Snapshot(t), a.dim, a.start, a.length));
    RC_ASSERT(n.SharesStorageWith(t));
  });
  RC_CLASSIFY(a.length == spec.shape[a.dim], "full extent");
  RC_CLASSIFY(a.length == 0, "empty");
}

// Narrow with hostile dim / start / length on ordinary tensors: the exact code, and when it
// succeeds the dense model, the exact layout and nothing written.
void NarrowWithHostileArguments() {
  const TensorSpec spec = *GenAnyTensorSpec();
  const NarrowArgs a = *rc::gen::exec([shape = spec.shape] {
    NarrowArgs a;
    a.dim = *GenHostileDim(static_cast<int>(shape.size()));
    const int64_t size = a.dim >= 0 && a.dim < static_cast<int>(shape.size()) ? shape[a.dim] : 0;
    a.start = *GenHostileInt(size);
    a.length = *GenHostileInt(size);
    return a;
  });
  const Expect expect = NarrowExpect(spec.shape, a.dim, a.start, a.length);
  RunIsolated([&] {
    const Tensor t = Build(spec);
    const std::vector<uint8_t> before = StorageBytes(t);
    const absl::StatusOr<Tensor> n = Narrow(t, a.dim, a.start, a.length);
    AssertStatus(n.status(), expect, "Narrow");
    RC_ASSERT(StorageBytes(t) == before);
    if (!n.ok()) return;
    RC_ASSERT(Snapshot(*n) == ModelNarrow(Snapshot(t), a.dim, a.start, a.length));
    RC_ASSERT(n->SharesStorageWith(t));
    std::vector<int64_t> shape = spec.shape;
    shape[a.dim] = a.length;
    const Int128 offset = t.layout().offset() + Int128{a.start} * t.layout().stride(a.dim);
    CheckLayoutIs(n->layout(), shape, AsVector(t.strides()),
                  Count(shape) > 0 ? std::optional<int64_t>(offset) : std::nullopt);
  });
  RC_TAG(ExpectName(expect));
  RC_CLASSIFY(a.start > INT32_MAX || a.length > INT32_MAX, "start or length past 2^31");
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

struct CatParts {
  int dim = 0;
  std::vector<TensorSpec> parts;
};
void showValue(const CatParts& c, std::ostream& os) {
  os << "along dim " << c.dim << ":";
  for (const TensorSpec& part : c.parts) {
    os << "\n  ";
    showValue(part, os);
  }
}

void CatMatchesModel() {
  const CatParts c = *rc::gen::exec([] {
    CatParts c;
    const DType dtype = *GenDType();
    const std::vector<int64_t> shape = *GenShape(1, 4, 0, 4);
    c.dim = *Uniform(0, static_cast<int>(shape.size()));
    for (int i = *Uniform(1, 4); i > 0; --i) {
      std::vector<int64_t> part_shape = shape;
      part_shape[c.dim] = *Uniform<int64_t>(0, 4);
      c.parts.push_back(*GenTensorSpec(dtype, part_shape, Values::kAny, LayoutKind::kAny));
    }
    return c;
  });
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
      const int64_t d = *rc::gen::elementOf(divisors);
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

struct SliceSetCase {
  TensorSpec dst, src;
  int dim = 0;
  int64_t offset = 0;
};
void showValue(const SliceSetCase& c, std::ostream& os) {
  os << "along dim " << c.dim << " at offset " << c.offset << "\n  dst ";
  showValue(c.dst, os);
  os << "\n  src ";
  showValue(c.src, os);
}

void SliceSetWritesExactlyItsTarget() {
  const SliceSetCase c = *rc::gen::exec([] {
    SliceSetCase c;
    const DType dtype = *GenDType();
    const std::vector<int64_t> shape = *GenShape(1, 4, 1, 5);
    c.dim = *Uniform(0, static_cast<int>(shape.size()));
    c.dst = *GenTensorSpec(dtype, shape, Values::kAny, LayoutKind::kAny);
    std::vector<int64_t> src_shape = shape;
    src_shape[c.dim] = *Uniform<int64_t>(0, shape[c.dim] + 1);
    c.offset = *Uniform<int64_t>(0, shape[c.dim] - src_shape[c.dim] + 1);
    c.src = *GenTensorSpec(dtype, src_shape, Values::kAny, LayoutKind::kAny);
    return c;
  });
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
    if (c.choice == 0) c.dim = *rc::gen::element(-1, rank, rank + 5);
    if (c.choice == 1 || c.choice == 5 || c.choice == 6) c.dim = *Uniform(0, rank);
    if (c.choice == 1) c.amount = *Uniform<int64_t>(1, 4);
    if (c.choice == 3) c.dim = *rc::gen::element(-1, rank);
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

// ----- tensor/hostile_views_refused_unless_inside

struct HostileView {
  DType dtype = DType::kF32;
  int64_t storage_elements = 0;
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};
void showValue(const HostileView& v, std::ostream& os) {
  os << "storage of " << v.storage_elements << " " << DTypeName(v.dtype) << ", shape "
     << SizesName(v.shape) << " strides " << SizesName(v.strides) << " offset "
     << SizeName(v.offset);
}

rc::Gen<HostileView> GenHostileView() {
  return rc::gen::exec([] {
    HostileView v;
    v.dtype = *GenDType();
    v.storage_elements = *Uniform<int64_t>(0, 65);
    const int rank = *Uniform(0, 5);
    v.shape = *rc::gen::container<std::vector<int64_t>>(rank, GenHostileInt(6));
    // From the innermost dimension out: a hostile stride or, one time in four, the row-major
    // stride of the dimensions inside it (saturated past int64_t), so that accepted views are
    // common and the contiguity rule meets strides that match it.
    v.strides.resize(rank);
    Int128 row_major = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const bool fits = row_major <= INT64_MAX;
      const bool use_row_major = *Uniform(0, 4) == 3 && fits;
      v.strides[d] = use_row_major ? static_cast<int64_t>(row_major) : *GenHostileInt(12);
      row_major = v.shape[d] < 0 ? Int128{INT64_MAX} + 1
                                 : std::min(row_major * v.shape[d], Int128{INT64_MAX} + 1);
    }
    v.offset = *GenHostileInt(8);
    return v;
  });
}

void HostileViewsRefusedUnlessInside() {
  const HostileView v = *GenHostileView();
  const Expect layout_expect = StridedLayoutExpect(v.shape, v.strides, v.offset);
  RunIsolated([&] {
    const ScopedStorageLimit limit(kCaseStorageLimit);
    // Storage elements 1, 2, 3, ... (exact in every dtype up to 256): each element of a view
    // names the storage offset it was read from.
    std::vector<float> values(v.storage_elements);
    std::iota(values.begin(), values.end(), 1.0f);
    const Tensor storage = Ok(Tensor::FromFloats(v.dtype, {v.storage_elements}, values));
    const std::vector<uint32_t> storage_bits = storage.ToBits();
    const absl::StatusOr<Layout> layout = Layout::Strided(v.shape, v.strides, v.offset);
    AssertStatus(layout.status(), layout_expect, "Layout::Strided");
    if (!layout.ok()) return;
    CheckLayoutIs(*layout, v.shape, v.strides, v.offset);
    const absl::StatusOr<Tensor> view = Tensor::View(storage.storage(), *layout);
    AssertStatus(view.status(), TensorViewExpect(v.shape, v.strides, v.offset, v.storage_elements),
                 "Tensor::View");
    if (!view.ok()) return;
    CheckElements(*view, [&](const std::vector<int64_t>& index) {
      Int128 at = v.offset;
      for (size_t d = 0; d < index.size(); ++d) at += Int128{index[d]} * v.strides[d];
      RC_ASSERT(at < Int128{v.storage_elements});
      return storage_bits[static_cast<size_t>(at)];
    });
    CheckContiguous(*view);
  });
  const std::optional<int64_t> count = ExactCount(v.shape);
  RC_TAG(layout_expect != Expect::kOk ? "layout refused or open"
         : TensorViewExpect(v.shape, v.strides, v.offset, v.storage_elements) == Expect::kOk
             ? "view inside the storage"
             : "view refused or empty");
  RC_CLASSIFY(count && *count > INT32_MAX && layout_expect == Expect::kOk,
              "valid layout of 2^31+ elements");
}

// ----- tensor/huge_empty_and_broadcast_tensors

// A tensor with dimensions past 2^31 that needs no memory:
//   kZeros:     Tensor::Zeros of an empty shape, then permuted;
//   kEmptyView: an empty strided view whose other dimensions keep the row-major strides they
//               would have with the zero dimension at size 1 (0 where that does not fit): the
//               layout a huge tensor narrowed to length 0 has;
//   kBroadcast: stride 0 along every dimension of size above 1 (size-1 dimensions take any
//               stride: their index is always 0).
// Both views are over a 1-element storage holding `value`.
enum class HugeKind { kZeros, kEmptyView, kBroadcast };

struct HugeTensor {
  HugeKind kind = HugeKind::kZeros;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape, strides;  // views: their layout; kZeros: Zeros' shape, no strides
  std::vector<int> order;               // kZeros: the permutation applied after Zeros
  float value = 1;
};
void showValue(const HugeTensor& h, std::ostream& os) {
  if (h.kind == HugeKind::kZeros) {
    os << "Zeros(" << DTypeName(h.dtype) << ", " << SizesName(h.shape) << ") permuted by ["
       << absl::StrJoin(h.order, ", ") << "]";
    return;
  }
  os << (h.kind == HugeKind::kBroadcast ? "broadcast" : "empty") << " view of a 1-element "
     << DTypeName(h.dtype) << " storage (value " << h.value << "): shape " << SizesName(h.shape)
     << " strides " << SizesName(h.strides) << " offset 0";
}

rc::Gen<HugeTensor> GenHugeTensor() {
  return rc::gen::exec([] {
    HugeTensor h;
    h.kind = static_cast<HugeKind>(*Uniform(0, 3));
    h.dtype = *GenDType();
    h.value = *GenElement(h.dtype, Values::kAny);
    const int rank = *Uniform(h.kind == HugeKind::kEmptyView ? 2 : 1, 5);
    h.shape = *rc::gen::container<std::vector<int64_t>>(rank, GenHugeDim());
    switch (h.kind) {
      case HugeKind::kZeros:
        // Innermost half the time, so that Zeros accepts most shapes (the partial products
        // inside the innermost zero must fit); the permutation moves it.
        h.shape[*Uniform(0, 2) == 0 ? rank - 1 : *Uniform(0, rank)] = 0;
        h.order = *GenPermutation(rank);
        break;
      case HugeKind::kEmptyView: {
        h.shape[*Uniform(0, rank)] = 0;
        h.strides.resize(rank);
        Int128 row_major = 1;  // saturates just past int64_t
        for (int d = rank - 1; d >= 0; --d) {
          h.strides[d] = row_major <= INT64_MAX ? static_cast<int64_t>(row_major) : 0;
          row_major = std::min(row_major * std::max<int64_t>(h.shape[d], 1), Int128{INT64_MAX} + 1);
        }
        break;
      }
      case HugeKind::kBroadcast:
        for (int64_t size : h.shape) {
          h.strides.push_back(size == 1 ? std::max<int64_t>(0, *GenHostileInt(12)) : 0);
        }
        break;
    }
    return h;
  });
}

// The layout the huge tensor has once built, or nullopt when building it must fail.
struct ShapeStrides {
  std::vector<int64_t> shape, strides;
};
std::optional<ShapeStrides> ExpectedLayout(const HugeTensor& h) {
  if (h.kind != HugeKind::kZeros) {
    // kOkOrInvalid (an empty view reaching past int64_t) may be built or refused: the op is
    // drawn for the built one, and the check stops if it was refused.
    if (StridedLayoutExpect(h.shape, h.strides, 0) == Expect::kInvalidArgument) return std::nullopt;
    return ShapeStrides{h.shape, h.strides};
  }
  const std::optional<std::vector<int64_t>> strides = RowMajorStrides(h.shape);
  if (!strides) return std::nullopt;
  ShapeStrides permuted;
  for (int d : h.order) {
    permuted.shape.push_back(h.shape[d]);
    permuted.strides.push_back((*strides)[d]);
  }
  return permuted;
}

enum class HugeOpKind { kNarrow, kTranspose, kPermute, kReshape, kContiguous, kCat };

struct HugeOp {
  HugeOpKind kind = HugeOpKind::kContiguous;
  NarrowArgs narrow;  // kNarrow; kTranspose uses dim and dim1; kCat joins along narrow.dim
  int dim1 = 0;
  std::vector<int> order;              // kPermute
  std::vector<int64_t> target;         // kReshape
  std::vector<int64_t> piece_lengths;  // kCat: piece i is Narrow(tensor, dim, 0, length i)
};
void showValue(const HugeOp& op, std::ostream& os) {
  switch (op.kind) {
    case HugeOpKind::kNarrow:
      os << "Narrow(";
      showValue(op.narrow, os);
      os << ")";
      break;
    case HugeOpKind::kTranspose:
      os << "Transpose(" << op.narrow.dim << ", " << op.dim1 << ")";
      break;
    case HugeOpKind::kPermute:
      os << "Permute([" << absl::StrJoin(op.order, ", ") << "])";
      break;
    case HugeOpKind::kReshape:
      os << "Reshape(" << SizesName(op.target) << ")";
      break;
    case HugeOpKind::kContiguous:
      os << "Contiguous()";
      break;
    case HugeOpKind::kCat:
      os << "Cat along dim " << op.narrow.dim << " of Narrow(dim " << op.narrow.dim
         << ", start 0) pieces of lengths " << SizesName(op.piece_lengths);
      break;
  }
}

rc::Gen<HugeOp> GenHugeOp(const ShapeStrides& base, bool broadcast) {
  return rc::gen::exec([base, broadcast] {
    HugeOp op;
    const std::vector<int64_t>& shape = base.shape;
    const int rank = static_cast<int>(shape.size());
    op.kind = static_cast<HugeOpKind>(*Uniform(0, 6));
    op.narrow.dim = *Uniform(0, rank);
    const int64_t size = shape[op.narrow.dim];
    auto up_to_size = [size] {  // a valid length along narrow.dim
      return static_cast<int64_t>(*Uniform<uint64_t>(0, static_cast<uint64_t>(size) + 1));
    };
    switch (op.kind) {
      case HugeOpKind::kNarrow:
        op.narrow.start = *GenHostileInt(size);  // typical starts are past 2^31 here
        op.narrow.length = *GenHostileInt(size);
        break;
      case HugeOpKind::kTranspose:
        op.dim1 = *Uniform(0, rank);
        break;
      case HugeOpKind::kPermute:
        op.order = *GenPermutation(rank);
        break;
      case HugeOpKind::kCat:
        for (int i = *Uniform(1, 4); i > 0; --i) {
          op.piece_lengths.push_back(*Uniform(0, 2) == 0 ? size : up_to_size());
        }
        break;
      case HugeOpKind::kContiguous:
        break;
      case HugeOpKind::kReshape:
        if (!broadcast) {  // another empty shape (or, one time in five, a count mismatch)
          op.target = *rc::gen::container<std::vector<int64_t>>(*Uniform(1, 6), GenHugeDim());
          if (*Uniform(0, 5) != 0) op.target[*Uniform<size_t>(0, op.target.size())] = 0;
          break;
        }
        // The same count regrouped (a 1 inserted, two neighbours merged, all flattened,
        // reversed), or one dimension off by one (a count mismatch).
        op.target = shape;
        switch (*Uniform(0, 5)) {
          case 0:
            op.target.insert(op.target.begin() + *Uniform(0, rank + 1), 1);
            break;
          case 1:
            if (rank >= 2) {
              const int d = *Uniform(0, rank - 1);
              op.target[d] *= op.target[d + 1];  // fits: the count does
              op.target.erase(op.target.begin() + d + 1);
            }
            break;
          case 2:
            op.target = {*ExactCount(shape)};
            break;
          case 3:
            std::reverse(op.target.begin(), op.target.end());
            break;
          default:
            op.target[op.narrow.dim] += size == INT64_MAX ? -1 : 1;
            break;
        }
        break;
    }
    return op;
  });
}

// Builds the huge tensor, checking every step's code and layout; nullopt when it was refused.
std::optional<Tensor> BuildHuge(const HugeTensor& h) {
  if (h.kind != HugeKind::kZeros) {
    const Tensor storage = Ok(Tensor::FromFloats(h.dtype, {1}, {h.value}));
    const absl::StatusOr<Layout> layout = Layout::Strided(h.shape, h.strides, 0);
    AssertStatus(layout.status(), StridedLayoutExpect(h.shape, h.strides, 0), "Layout::Strided");
    if (!layout.ok()) return std::nullopt;
    CheckLayoutIs(*layout, h.shape, h.strides, 0);
    return Ok(Tensor::View(storage.storage(), *layout));  // needs at most the one element
  }
  const absl::StatusOr<Tensor> zeros = Tensor::Zeros(h.dtype, h.shape);
  AssertStatus(zeros.status(), NewTensorExpect(h.shape, h.dtype, MaxStorageBytes()),
               "Tensor::Zeros");
  if (!zeros.ok()) return std::nullopt;
  CheckLayoutIs(zeros->layout(), h.shape, RowMajorStrides(h.shape), 0);
  return Ok(Permute(*zeros, h.order));
}

// A view op's result: the exact code, then the exact layout, the elements (every one is the
// broadcast value) and Contiguous of it.
void CheckViewResult(const absl::StatusOr<Tensor>& result, Expect expect, const char* op,
                     const Tensor& input, const std::vector<int64_t>& shape,
                     const std::optional<std::vector<int64_t>>& strides,
                     std::optional<int64_t> offset, uint32_t value_bits) {
  AssertStatus(result.status(), expect, op);
  TagOutcome(op, result.status());
  if (!result.ok()) return;
  CheckLayoutIs(result->layout(), shape, strides, ExactCount(shape) == 0 ? std::nullopt : offset);
  RC_ASSERT(result->SharesStorageWith(input));
  CheckElements(*result, [&](const std::vector<int64_t>&) { return value_bits; });
  CheckContiguous(*result);
}

void CheckHugeOp(const HugeTensor& h, const ShapeStrides& base, const HugeOp& op) {
  const ScopedStorageLimit limit(kCaseStorageLimit);
  const std::optional<Tensor> built = BuildHuge(h);
  if (!built) return;  // refused, as the oracle allows (BuildHuge checked the code)
  const Tensor& t = *built;
  // The broadcast element's bits, read from a plain 1-element tensor (not through the view).
  const uint32_t value_bits = Ok(Tensor::FromFloats(h.dtype, {1}, {h.value})).ToBits()[0];
  const int rank = static_cast<int>(base.shape.size());
  CheckLayoutIs(t.layout(), base.shape, base.strides, 0);
  const int64_t count = *ExactCount(base.shape);
  const int dim = op.narrow.dim;
  ShapeStrides want = base;
  switch (op.kind) {
    case HugeOpKind::kNarrow: {
      const NarrowArgs& a = op.narrow;
      const Expect expect = NarrowExpect(base.shape, dim, a.start, a.length);
      want.shape[dim] = a.length;
      const Int128 offset = Int128{a.start} * base.strides[dim];  // valid: inside the layout
      CheckViewResult(
          Narrow(t, dim, a.start, a.length), expect, "Narrow", t, want.shape, want.strides,
          expect == Expect::kOk ? std::optional<int64_t>(offset) : std::nullopt, value_bits);
      break;
    }
    case HugeOpKind::kTranspose:
      std::swap(want.shape[dim], want.shape[op.dim1]);
      std::swap(want.strides[dim], want.strides[op.dim1]);
      CheckViewResult(Transpose(t, dim, op.dim1), TransposeExpect(rank, dim, op.dim1), "Transpose",
                      t, want.shape, want.strides, 0, value_bits);
      break;
    case HugeOpKind::kPermute:
      for (size_t i = 0; i < op.order.size(); ++i) {
        want.shape[i] = base.shape[op.order[i]];
        want.strides[i] = base.strides[op.order[i]];
      }
      CheckViewResult(Permute(t, op.order), PermuteExpect(rank, op.order), "Permute", t, want.shape,
                      want.strides, 0, value_bits);
      break;
    case HugeOpKind::kReshape: {
      // A broadcast (stride 0 wherever size > 1) and an empty tensor can always be viewed
      // under any shape of their count: Reshape must return a view (strides unchecked here;
      // CheckViewResult checks they keep every element inside the 1-element storage).
      const absl::StatusOr<Tensor> r = Reshape(t, op.target);
      CheckViewResult(r, ReshapeExpect(count, op.target), "Reshape", t, op.target, std::nullopt, 0,
                      value_bits);
      if (r.ok() && count > 0) RC_ASSERT(r->layout().required_storage() == 1);
      break;
    }
    case HugeOpKind::kContiguous:
      CheckContiguous(t);
      break;
    case HugeOpKind::kCat: {
      std::vector<Tensor> pieces;
      std::vector<std::vector<int64_t>> shapes;
      for (int64_t length : op.piece_lengths) {
        pieces.push_back(Ok(Narrow(t, dim, 0, length)));
        shapes.push_back(base.shape);
        shapes.back()[dim] = length;
      }
      const std::vector<DType> dtypes(pieces.size(), h.dtype);
      const absl::StatusOr<Tensor> joined = Cat(pieces, dim);
      AssertStatus(joined.status(), CatExpect(shapes, dtypes, dim, MaxStorageBytes()), "Cat");
      TagOutcome("Cat", joined.status());
      if (!joined.ok()) break;
      const std::vector<int64_t> shape = *CatShape(shapes, dtypes, dim);
      CheckLayoutIs(joined->layout(), shape, RowMajorStrides(shape), 0);
      RC_ASSERT(!joined->SharesStorageWith(t));
      CheckElements(*joined, [&](const std::vector<int64_t>&) { return value_bits; });
      break;
    }
  }
}

void HugeEmptyAndBroadcastTensors() {
  const HugeTensor h = *GenHugeTensor();
  const std::optional<ShapeStrides> base = ExpectedLayout(h);
  if (!base) {  // the construction itself must be refused with the exact code
    RunIsolated([&] {
      const ScopedStorageLimit limit(kCaseStorageLimit);
      RC_ASSERT(!BuildHuge(h).has_value());
    });
    RC_TAG("construction refused");
    return;
  }
  const HugeOp op = *GenHugeOp(*base, h.kind == HugeKind::kBroadcast);
  RunIsolated([&] { CheckHugeOp(h, *base, op); });
  static const char* const kKindNames[] = {"zeros", "empty view", "broadcast"};
  RC_TAG(kKindNames[static_cast<int>(h.kind)]);
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
      {"tensor/hostile_views_refused_unless_inside", 600, HostileViewsRefusedUnlessInside},
      {"tensor/narrow_with_hostile_arguments", 600, NarrowWithHostileArguments},
      {"tensor/huge_empty_and_broadcast_tensors", 600, HugeEmptyAndBroadcastTensors},
  };
}

}  // namespace kvcheck::properties
