// File: attention_bad_calls.h
// Laws about the attention calls a kernel must not compute, and the ones with nothing to
// compute, for every kernel of a subject (the registry's, or an external engine's through its
// wrapper):
//   - attention/bad_calls_refused: a generated valid call with one thing made wrong (a
//     non-finite scale, a negative or non-finite softcap, a negative window, the wrong number
//     of ALiBi slopes, a mask of the wrong dtype, rank or any wrong dimension, position vectors
//     one entry short or long, k and v of different shapes, B or D differing between q and k,
//     H not a multiple of KH, KH = 0, D = 0, mixed dtypes, a rank-3 q) fails with
//     kInvalidArgument, its message naming what was wrong, and leaves q, k, v and the mask
//     as they were;
//   - attention/empty_calls: a call with no output rows (B, H or Sq = 0) whose other sizes
//     reach 2^40 returns its (B, H, Sq, D) output in the call's dtype, without looping over
//     the sizes or computing their products unchecked.
#ifndef KVCHECK_PROPERTIES_ATTENTION_BAD_CALLS_H_
#define KVCHECK_PROPERTIES_ATTENTION_BAD_CALLS_H_

#include "properties/property_runner.h"
#include "properties/subject.h"

namespace kvcheck::properties {

// REQUIRES: `subject` outlives the properties.
PropertySpec BadCallsRefused(const Subject& subject);
PropertySpec EmptyCalls(const Subject& subject);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_ATTENTION_BAD_CALLS_H_
