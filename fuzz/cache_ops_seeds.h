// File: cache_ops_seeds.h
// The cache_ops seed corpus as plans (draw_encoder.h): for each boundary class of
// CacheOpsSeedClasses() (cache_ops_run.h), inputs that reach it, spread over the strategies
// and dtypes.
#ifndef KVCHECK_FUZZ_CACHE_OPS_SEEDS_H_
#define KVCHECK_FUZZ_CACHE_OPS_SEEDS_H_

#include <vector>

#include "fuzz/draw_encoder.h"
#include "src/cache/registry.h"

namespace kvcheck::fuzz {

// Seeds for the target whose strategies (in the order it picks from) are `strategies`; every
// class needs the registry's strategies (named "prealloc", "ring", "scattered", "paged", ...).
std::vector<PlannedInput> CacheOpsSeeds(const std::vector<const CacheStrategy*>& strategies);

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_CACHE_OPS_SEEDS_H_
