#include "properties/hostile_tensor_properties.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/dense_model.h"
#include "properties/generators.h"
#include "properties/size_oracle.h"
#include "properties/tensor_checks.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/dtype.h"
#include "src/tensor/layout.h"
#include "src/tensor/storage.h"
#include "src/tensor/tensor.h"
#include "src/tensor/view_ops.h"

// As in tensor_properties.cc: every property draws all of its values first (in the parent),
// then runs one RunIsolated check (in a forked child); expected codes, sizes and layouts come
// from the exact 128-bit oracle (size_oracle.h), never from the engine's own arithmetic.

namespace kvcheck::properties {
namespace {

using Int128 = __int128;

// ----- tensor/narrow_with_hostile_arguments

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

std::vector<PropertySpec> HostileTensorProperties() {
  return {
      {"tensor/hostile_views_refused_unless_inside", 600, HostileViewsRefusedUnlessInside},
      {"tensor/narrow_with_hostile_arguments", 600, NarrowWithHostileArguments},
      {"tensor/huge_empty_and_broadcast_tensors", 600, HugeEmptyAndBroadcastTensors},
  };
}

}  // namespace kvcheck::properties
