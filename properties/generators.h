// File: generators.h
// RapidCheck generators shared by the properties: dtypes, element values (with the special
// values a law allows), shapes, and tensors with hostile memory layouts.
#ifndef KVCHECK_PROPERTIES_GENERATORS_H_
#define KVCHECK_PROPERTIES_GENERATORS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "src/tensor/dtype.h"

namespace kvcheck::properties {

rc::Gen<DType> GenDType();

// Uniform integer in [lo, hi), independent of RapidCheck's size ramp: for categorical
// choices, which should not all collapse to the first option in the early small cases.
template <typename T>
rc::Gen<T> Uniform(T lo, T hi) {
  return rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
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

// A tensor of `shape` with generated values and a generated layout.
rc::Gen<TensorSpec> GenTensorSpec(DType dtype, std::vector<int64_t> shape, Values values,
                                  LayoutKind layout);

// `values` (a contiguous spec) given a generated layout (LayoutKind::kAny): only the layout
// is drawn, for tensors whose values come from elsewhere (a seed).
rc::Gen<TensorSpec> GenLayoutFor(TensorSpec values);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_GENERATORS_H_
