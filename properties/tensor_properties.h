// File: tensor_properties.h
// RapidCheck properties of the tensor ops (src/tensor) against the dense model:
// narrow/cat round trips, transpose twice is the identity, contiguous preserves every element,
// reshape keeps row-major order, slice_set writes exactly its target region and nothing else,
// views see writes through shared storage, casts round like the dtype, and bad arguments give
// the right error code and change nothing.
//
// The hostile-size properties (sizes past 2^31, near INT64_MIN / MAX, small negatives) are
// described in properties/hostile_tensor_properties.h.
//
// Every case draws its values first and runs its check in a forked child (case_isolation.h):
// a crash of the code under test is a failing, shrunk case with its reproduce string.
#ifndef KVCHECK_PROPERTIES_TENSOR_PROPERTIES_H_
#define KVCHECK_PROPERTIES_TENSOR_PROPERTIES_H_

#include <vector>

#include "properties/property_runner.h"

namespace kvcheck::properties {

// Every tensor property: the ten above, then HostileTensorProperties(), each with its default
// case count.
std::vector<PropertySpec> TensorProperties();

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_TENSOR_PROPERTIES_H_
