// File: tensor_spec.h
// TensorSpec: a generated tensor written out as plain data (dtype, shape, values and how it
// is laid out in memory), so that RapidCheck can shrink it and print it, and a property can
// build the same Tensor again from the printed counterexample.
//
// The layout is a strided view into a larger buffer: the buffer's dimensions are a
// permutation of the logical ones, each padded; the view narrows every buffer dimension at
// an offset and permutes back. The padding and red zones around the buffer hold a NaN so
// that a read outside the view shows up (kRedZoneElements). Identity permutation and no padding gives a plain contiguous tensor;
// (B, S, KH, D) buffers viewed as (B, KH, S, D) are the transposed inputs of a model's
// attention (candle's KvCache rejects them for S > 1).
#ifndef KVCHECK_PROPERTIES_TENSOR_SPEC_H_
#define KVCHECK_PROPERTIES_TENSOR_SPEC_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/tensor/dtype.h"
#include "src/tensor/tensor.h"

namespace kvcheck::properties {

struct TensorSpec {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<float> values;       // row-major logical order, exactly representable in dtype
  std::vector<int> buffer_order;   // buffer dim i holds logical dim buffer_order[i]
  std::vector<int64_t> padding;    // extra elements per logical dim in the buffer
  std::vector<int64_t> offset;     // start of the view per logical dim, <= padding
  // Logical dims read with stride 0 (a broadcast view, as expand() makes): `values` must
  // repeat along them (RepeatAlong), and the buffer holds one element across each.
  std::vector<int> broadcast_dims;

  // The plain contiguous layout of `shape`.
  static TensorSpec Contiguous(DType dtype, std::vector<int64_t> shape, std::vector<float> values);
};

// Red zones: Materialize puts every buffer between kRedZoneElements poisoned elements before
// it and after it, and poisons its padding too, with a signalling NaN of the dtype
// (RedZoneBits: f32 0x7fa5a5a5, f16 0x7d5a, bf16 0x7fa5). Code that reads one element past a
// view, or a row's padding, reads NaN, which reaches its output and fails the case; the same
// NaN every run, so the failure replays. (Heap garbage past a plain allocation would give
// another value, or a plausible one, every time.)
inline constexpr int64_t kRedZoneElements = 64;
inline uint32_t RedZoneBits(DType dtype) {
  return dtype == DType::kF32 ? 0x7fa5a5a5u : dtype == DType::kF16 ? 0x7d5au : 0x7fa5u;
}

// Makes `spec` a broadcast along logical dim `dim`: every value becomes the one at index 0
// of that dim, and the view reads it with stride 0.
void RepeatAlong(TensorSpec& spec, int dim);

// Builds the tensor: a new buffer, the view, the values copied in.
absl::StatusOr<Tensor> Materialize(const TensorSpec& spec);

// Short description for counterexamples: dtype, shape, layout, and the values when few.
void showValue(const TensorSpec& spec, std::ostream& os);

// The layout alone, in words: "contiguous", or the buffer order, padding, offsets and
// stride-0 dims that are not plain ("buffer order [0,2,1,3] padding [0,1,0,0] offset
// [0,1,0,0]").
std::string DescribeLayout(const TensorSpec& spec);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_TENSOR_SPEC_H_
