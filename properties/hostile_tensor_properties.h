// File: hostile_tensor_properties.h
// RapidCheck properties of the tensor ops (src/tensor) at hostile sizes (past 2^31, near
// INT64_MIN / MAX, small negatives; the same edges as the tensor_ops fuzzer), judged by the
// exact 128-bit oracle of properties/size_oracle.h:
//   tensor/hostile_views_refused_unless_inside: Layout::Strided + Tensor::View of a small
//     storage with hostile shape, strides and offset give the exact code; an accepted view
//     shows the storage element at its exact offset, and Contiguous of it is exact too;
//   tensor/narrow_with_hostile_arguments: Narrow with hostile dim / start / length on ordinary
//     tensors gives the exact code, and on success the dense model and the exact layout;
//   tensor/huge_empty_and_broadcast_tensors: tensors with dims past 2^31 that need no memory
//     (empty shapes from Zeros, empty strided views, zero-stride views of one element) under
//     Narrow, Transpose, Permute, Reshape, Contiguous and Cat: every result's shape, strides,
//     offset, element count, required storage and contiguity against exact arithmetic, every
//     refusal with the exact code (kInvalidArgument for a joined size or byte count past
//     int64_t or a shape without a contiguous layout, kResourceExhausted past the storage
//     limit, which the check lowers to 1 MiB so that no result is really allocated).
//
// Every case draws its values first and runs its check in a forked child (case_isolation.h):
// a crash of the code under test is a failing, shrunk case with its reproduce string.
#ifndef KVCHECK_PROPERTIES_HOSTILE_TENSOR_PROPERTIES_H_
#define KVCHECK_PROPERTIES_HOSTILE_TENSOR_PROPERTIES_H_

#include <vector>

#include "properties/property_runner.h"

namespace kvcheck::properties {

// The three properties above, in that order, with their default case counts.
std::vector<PropertySpec> HostileTensorProperties();

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_HOSTILE_TENSOR_PROPERTIES_H_
