// File: generators.h
// RapidCheck generators shared by the properties: dtypes, element values (with the special
// values a law allows), shapes, and tensors with hostile memory layouts.
#ifndef KVCHECK_PROPERTIES_GENERATORS_H_
#define KVCHECK_PROPERTIES_GENERATORS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "src/tensor/dtype.h"

namespace kvcheck {
// A dtype in a counterexample: "f16", not its enum value.
inline void showValue(DType dtype, std::ostream& os) { os << DTypeName(dtype); }
}  // namespace kvcheck

namespace kvcheck::properties {

rc::Gen<DType> GenDType();

// The values a drawn integer `value` shrinks through, towards `lo`: RapidCheck's halving
// steps (lo, then ever closer to `value`) for a fast descent, then every value from lo + 1 up
// to 8 past lo that is still smaller. The halving steps alone stop at the first value none
// of them reaches: a failure at D % 4 == 1 would stay at D = 17, never trying 5. (A longer
// tail costs a forked case per value at every step of a shrink: small values are where
// counterexamples end.)
template <typename T>
rc::Seq<T> ShrinkTowards(T value, T lo) {
  const T last = value - lo > 9 ? static_cast<T>(lo + 9) : value;
  return rc::seq::concat(rc::shrink::towards<T>(value, lo),
                         rc::seq::range<T>(static_cast<T>(lo + 1 < last ? lo + 1 : last), last));
}

// Uniform integer in [lo, hi), independent of RapidCheck's size ramp (for categorical choices,
// which should not all collapse to the first option in the early small cases); shrinks
// towards lo through ShrinkTowards.
// REQUIRES: lo < hi.
template <typename T>
rc::Gen<T> Uniform(T lo, T hi) {
  return rc::Gen<T>([lo, hi](const rc::Random& random, int) {
    if (!(lo < hi)) throw rc::GenerationFailure("Uniform: empty range");
    const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const T value = static_cast<T>(lo + static_cast<T>(rc::Random(random).next() % range));
    return rc::shrinkable::shrinkRecur(value, [lo](T x) { return ShrinkTowards<T>(x, lo); });
  });
}

// A drawn value with a name, so that a counterexample says what a number is ("flash threads:
// 3", not "int: 3"): RapidCheck prints every top-level draw of a property body.
template <typename T>
struct Labeled {
  std::string label;
  T value;
};

template <typename T>
void showValue(const Labeled<T>& labeled, std::ostream& os) {
  os << labeled.label << ": ";
  rc::show(labeled.value, os);
}

// `gen` with a label: `const int threads = (*Label("flash threads", Uniform(1, 5))).value;`
template <typename T>
rc::Gen<Labeled<T>> Label(std::string label, rc::Gen<T> gen) {
  return rc::gen::map(std::move(gen),
                      [label](T value) { return Labeled<T>{label, std::move(value)}; });
}

// One of `values`, uniformly, shrinking towards the first: list the simplest choice first (the
// smallest size, the feature off). RapidCheck's own element() and elementOf() never shrink, so
// a counterexample would keep whatever they drew.
template <typename T>
rc::Gen<T> ChoiceOf(std::vector<T> values) {
  const size_t count = values.size();
  return rc::gen::map(Uniform<size_t>(0, count),
                      [values = std::move(values)](size_t i) { return values[i]; });
}

template <typename T, typename... Ts>
rc::Gen<std::decay_t<T>> Choice(T first, Ts... rest) {
  using V = std::decay_t<T>;
  return ChoiceOf<V>(std::vector<V>{static_cast<V>(first), static_cast<V>(rest)...});
}

// One of `options` ({weight, generator}), drawn by weight, shrinking towards the first option
// and then within the option drawn: list the simplest first. RapidCheck's weightedOneOf and
// oneOf never shrink their choice (a NaN element stayed a NaN, a nonzero dimension nonzero).
// REQUIRES: the weights are positive.
template <typename T>
rc::Gen<T> WeightedOneOf(std::vector<std::pair<int, rc::Gen<T>>> options) {
  int total = 0;
  for (const auto& option : options) total += option.first;
  return rc::gen::mapcat(Uniform(0, total), [options = std::move(options)](int ticket) {
    for (const auto& [weight, gen] : options) {
      if (ticket < weight) return gen;
      ticket -= weight;
    }
    return options.back().second;
  });
}

// An integer in [lo, hi], uniformly, shrinking towards the one nearest 0 (then by magnitude,
// the positive one first). RapidCheck's inRange shrinks towards its lower bound: a value of
// [-8, 8] shrank to -8, an exponent of [-20, 11] to 2^-20.
// REQUIRES: lo <= hi.
rc::Gen<int> NearZero(int lo, int hi);

// True `percent`% of the time; shrinks to false. For optional features, so that a shrunk
// counterexample keeps only the features the failure needs (a draw that makes a feature
// *on* when it is 0 would shrink every feature on).
inline bool Sometimes(int percent) { return *Uniform(0, 100) >= 100 - percent; }

// Which values an element may take.
enum class Values {
  kSmallIntegers,  // exact in every dtype; sums are exact too (for bit-exact laws)
  kFinite,         // normal values of varied magnitude, plus zeros and subnormals
  kAny,            // kFinite plus NaN, +-inf
};

// One element value, already rounded to `dtype`.
rc::Gen<float> GenElement(DType dtype, Values values);

// A shape of rank in [min_rank, max_rank] with every dimension in [min_dim, max_dim]
// (a zero dimension, when allowed, about one time in ten).
rc::Gen<std::vector<int64_t>> GenShape(int min_rank, int max_rank, int64_t min_dim,
                                       int64_t max_dim);

// How a tensor is laid out in memory.
enum class LayoutKind {
  kContiguous,   // plain row-major
  kAny,          // random permutation of the buffer dims, random padding and offsets
};

// `count` finite element values of the kValues::kFinite kinds (small integers, varied
// magnitudes, +0 and -0, subnormals of the dtype), already rounded to `dtype`, from a
// SplitMix64 stream seeded with `seed`: one draw for a whole tensor, where bit patterns matter
// but per-element shrinking does not (cache contents), and per-element generators would cost
// more than the case.
std::vector<float> SeededElements(uint64_t seed, int64_t count, DType dtype);

// The drawn parts of a hostile layout (LayoutKind::kAny), independent of the tensor's shape so
// that a case can shrink its shape and keep its layout: transpositions of buffer dimensions
// (a, a + 1 + gap) and paddings of one dimension (with an offset into the padding), each
// skipped where its dimension is past the rank. Shrinks to the plain layout (no swaps, no
// padding), and a swap or padding towards dimension 0.
struct LayoutPad {
  int dim = 0;
  int64_t amount = 1;       // 1..2 elements of padding
  int64_t offset_seed = 0;  // offset = offset_seed % (amount + 1)
};
struct LayoutDraw {
  std::vector<std::pair<int, int>> swaps;  // (a, gap)
  std::vector<LayoutPad> pads;
};
rc::Gen<LayoutDraw> GenLayoutDraw();
// The buffer dimension order `layout` gives a tensor of `rank`.
std::vector<int> LayoutOrder(const LayoutDraw& layout, int rank);
// `spec` (contiguous) laid out as `layout` says.
TensorSpec ApplyLayout(TensorSpec spec, const LayoutDraw& layout);
// A hostile layout `percent`% of the time (else none: contiguous), as one draw that shrinks to
// none.
rc::Gen<std::optional<LayoutDraw>> GenOptionalLayout(int percent);

// `count` element values (GenElement's classes and weights), drawn from one seed, as one draw
// that shrinks as a list: chunks removed (the values after them move to lower indices) and
// each value made simpler (0, then an integer nearer 0; NaN and +-inf to 0 or 1). A failure
// that needs one special value in a large tensor shrinks to that value at index 0.
rc::Gen<std::vector<float>> GenElements(DType dtype, Values values, int64_t count);

// A tensor's values and layout, drawn before its shape, so that a shape that shrinks keeps
// them. Element i takes values[i], 0 past the end of the list.
struct TensorPlan {
  DType dtype = DType::kF32;
  std::vector<float> values;
  std::optional<LayoutDraw> layout;  // none: contiguous
};
// A plan for tensors of up to `max_count` elements.
rc::Gen<TensorPlan> GenTensorPlan(DType dtype, Values values, LayoutKind layout,
                                  int64_t max_count);
// The tensor of `shape` that `plan` describes.
TensorSpec SpecFromPlan(const TensorPlan& plan, std::vector<int64_t> shape);

// A tensor of `shape` with generated values and a generated layout (GenTensorPlan's).
rc::Gen<TensorSpec> GenTensorSpec(DType dtype, std::vector<int64_t> shape, Values values,
                                  LayoutKind layout);

// A length: one of `edges` (those in [lo, edge_hi]; edge_hi < 0: hi) or, half the time,
// uniform in [lo, hi]. One draw, shrinking to the smallest edge and then to lo.
rc::Gen<int64_t> GenLengthNear(std::vector<int64_t> edges, int64_t lo, int64_t hi,
                               int64_t edge_hi = -1);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_GENERATORS_H_
