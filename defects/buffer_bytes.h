// File: buffer_bytes.h
// What the defect models count in their CacheCounters. A model keeps honest counters (every
// buffer it allocates, every copy into one, a Fork's eager copy in the new cache), as the
// correct strategies do, so that the cache machine's counter laws hold for it and each model
// is killed by its own defect, not by its bookkeeping.
#ifndef KVCHECK_DEFECTS_BUFFER_BYTES_H_
#define KVCHECK_DEFECTS_BUFFER_BYTES_H_

#include <cstdint>

#include "src/cache/kv_cache.h"
#include "src/tensor/tensor.h"

namespace kvcheck::defects {

// The bytes of t's elements (an empty tensor: 0).
inline int64_t BufferBytes(const Tensor& t) {
  return t.rank() == 0 ? 0 : t.num_elements() * DTypeSize(t.dtype());
}

// A Fork that copies a buffer (`copy`, the new cache's deep copy) counts it as allocated and
// copied, in the new cache's counters.
inline void CountForkCopy(const Tensor& copy, CacheCounters& counters) {
  counters.bytes_allocated += BufferBytes(copy);
  counters.bytes_other_copied += BufferBytes(copy);
}

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_BUFFER_BYTES_H_
