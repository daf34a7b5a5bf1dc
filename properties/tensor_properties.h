// File: tensor_properties.h
// RapidCheck properties of the tensor ops (src/tensor) against the dense model:
// narrow/cat round trips, transpose twice is the identity, contiguous preserves every element,
// reshape keeps row-major order, slice_set writes exactly its target region and nothing else,
// views see writes through shared storage, casts round like the dtype, and bad arguments give
// the right error code and change nothing.
#ifndef KVCHECK_PROPERTIES_TENSOR_PROPERTIES_H_
#define KVCHECK_PROPERTIES_TENSOR_PROPERTIES_H_

#include <vector>

#include "properties/property_runner.h"

namespace kvcheck::properties {

std::vector<PropertySpec> TensorProperties();

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_TENSOR_PROPERTIES_H_
