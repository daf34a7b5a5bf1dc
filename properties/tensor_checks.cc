// The shared names, generators and checks of the tensor properties (tensor_checks.h).
#include "properties/tensor_checks.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <functional>
#include <iterator>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/generators.h"
#include "properties/size_oracle.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/storage.h"

namespace kvcheck::properties {

// ----- Names for counterexamples.

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

void showValue(const NarrowArgs& a, std::ostream& os) {
  os << "dim " << a.dim << ", start " << SizeName(a.start) << ", length " << SizeName(a.length);
}

// ----- Shapes.

int64_t Count(const std::vector<int64_t>& small_shape) {
  return std::accumulate(small_shape.begin(), small_shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

std::vector<int64_t> AsVector(const Dims& dims) { return {dims.begin(), dims.end()}; }

// ----- Generators (run in the parent).

rc::Gen<TensorSpec> GenAnyTensorSpec(int min_rank, int64_t min_dim) {
  // The plan (values and layout) before the shape: a shape that shrinks keeps them.
  return rc::gen::exec([min_rank, min_dim] {
    const DType dtype = *GenDType();
    const TensorPlan plan = *GenTensorPlan(dtype, Values::kAny, LayoutKind::kAny, 625);
    return SpecFromPlan(plan, *GenShape(min_rank, 4, min_dim, 5));
  });
}

rc::Gen<NarrowArgs> GenNarrowArgs(std::vector<int64_t> shape) {
  return rc::gen::exec([shape = std::move(shape)] {
    // Drawn past the sizes and clamped to them, so that a shape that shrinks keeps a start
    // and length it still has room for (a draw modulo the size would move them).
    const int rank = static_cast<int>(shape.size());
    NarrowArgs a;
    a.dim = std::min(*Uniform(0, 4), rank - 1);
    a.start = std::min(*Uniform<int64_t>(0, 7), shape[a.dim]);
    a.length = std::min(*Uniform<int64_t>(0, 7), shape[a.dim] - a.start);
    return a;
  });
}

void showValue(const CatParts& c, std::ostream& os) {
  os << "along dim " << c.dim << ":";
  for (const TensorSpec& part : c.parts) {
    os << "\n  ";
    showValue(part, os);
  }
}

rc::Gen<CatParts> GenCatParts() {
  return rc::gen::exec([] {
    // The parts' plans before the shapes (shrink_to_minimum.h: a shape that shrinks keeps
    // the values and layouts).
    CatParts c;
    const DType dtype = *GenDType();
    const std::vector<TensorPlan> plans = *rc::gen::container<std::vector<TensorPlan>>(
        *Uniform<size_t>(1, 4), GenTensorPlan(dtype, Values::kAny, LayoutKind::kAny, 256));
    const std::vector<int64_t> shape = *GenShape(1, 4, 0, 4);
    c.dim = *Uniform(0, static_cast<int>(shape.size()));
    for (const TensorPlan& plan : plans) {
      std::vector<int64_t> part_shape = shape;
      part_shape[c.dim] = *Uniform<int64_t>(0, 4);
      c.parts.push_back(SpecFromPlan(plan, part_shape));
    }
    return c;
  });
}

void showValue(const SliceSetCase& c, std::ostream& os) {
  os << "along dim " << c.dim << " at offset " << c.offset << "\n  dst ";
  showValue(c.dst, os);
  os << "\n  src ";
  showValue(c.src, os);
}

rc::Gen<SliceSetCase> GenSliceSetCase() {
  return rc::gen::exec([] {
    SliceSetCase c;
    const DType dtype = *GenDType();
    const TensorPlan dst = *GenTensorPlan(dtype, Values::kAny, LayoutKind::kAny, 625);
    const TensorPlan src = *GenTensorPlan(dtype, Values::kAny, LayoutKind::kAny, 625);
    const std::vector<int64_t> shape = *GenShape(1, 4, 1, 5);
    c.dim = *Uniform(0, static_cast<int>(shape.size()));
    std::vector<int64_t> src_shape = shape;
    src_shape[c.dim] = *Uniform<int64_t>(0, shape[c.dim] + 1);
    c.offset = *Uniform<int64_t>(0, shape[c.dim] - src_shape[c.dim] + 1);
    c.dst = SpecFromPlan(dst, shape);
    c.src = SpecFromPlan(src, src_shape);
    return c;
  });
}

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

// The category is drawn first as an integer, which shrinks towards "typical" (RapidCheck's
// oneOf / elementOf never shrink their choice), then the value within it.
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

rc::Gen<int> GenHostileDim(int rank) {
  return rc::gen::mapcat(Uniform(0, 8), [rank](int category) -> rc::Gen<int> {
    if (category < 5) return rank == 0 ? rc::gen::just(0) : Uniform(0, rank);
    if (category == 5) return rc::gen::just(-1);
    if (category == 6) return rc::gen::just(rank);
    return Choice(INT_MAX, INT_MIN);
  });
}

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

ScopedStorageLimit::ScopedStorageLimit(int64_t bytes) : previous_(MaxStorageBytes()) {
  SetMaxStorageBytes(bytes);
}

ScopedStorageLimit::~ScopedStorageLimit() { SetMaxStorageBytes(previous_); }

Tensor Build(const TensorSpec& spec) {
  absl::StatusOr<Tensor> t = Materialize(spec);
  RC_ASSERT(t.ok());
  return *std::move(t);
}

void AssertStatus(const absl::Status& status, Expect expect, const char* op) {
  if (std::optional<std::string> mismatch = StatusMismatch(status, expect, op)) RC_FAIL(*mismatch);
}

void TagOutcome(const char* op, const absl::Status& status) {
  RC_TAG(absl::StrCat(op, ": ", absl::StatusCodeToString(status.code())));
}

std::vector<uint8_t> StorageBytes(const Tensor& t) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(t.storage()->bytes());
  return std::vector<uint8_t>(bytes, bytes + t.storage()->num_bytes());
}

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

}  // namespace kvcheck::properties
