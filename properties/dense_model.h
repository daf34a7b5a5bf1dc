// File: dense_model.h
// DenseTensor: the model the tensor-op properties compare against. A shape and the element
// bits in row-major order, with the ops written as index loops (no strides, no sharing), so
// each one is obviously correct.
#ifndef KVCHECK_PROPERTIES_DENSE_MODEL_H_
#define KVCHECK_PROPERTIES_DENSE_MODEL_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "src/tensor/tensor.h"

namespace kvcheck::properties {

struct DenseTensor {
  std::vector<int64_t> shape;
  std::vector<uint32_t> bits;  // row-major

  int64_t FlatIndex(const std::vector<int64_t>& index) const;
  bool operator==(const DenseTensor&) const = default;
};

// Reads every element of `tensor` by its multi-index (Tensor::GetBits), independent of the
// engine's fused strided loops.
DenseTensor Snapshot(const Tensor& tensor);

// Calls fn(index) for every multi-index of `shape` in row-major order.
template <typename Fn>
void ForEachIndex(const std::vector<int64_t>& shape, Fn&& fn) {
  for (int64_t d : shape) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(shape.size(), 0);
  while (true) {
    fn(index);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Shape and element bits (hex), for counterexamples.
void showValue(const DenseTensor& t, std::ostream& os);

DenseTensor ModelNarrow(const DenseTensor& t, int dim, int64_t start, int64_t length);
DenseTensor ModelTranspose(const DenseTensor& t, int dim0, int dim1);
// Result dimension i is dimension order[i] of t.
DenseTensor ModelPermute(const DenseTensor& t, const std::vector<int>& order);
DenseTensor ModelCat(const std::vector<DenseTensor>& parts, int dim);
// dst[..., offset + i, ...] = src[..., i, ...] along dim.
void ModelSliceSet(DenseTensor& dst, const DenseTensor& src, int dim, int64_t offset);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_DENSE_MODEL_H_
