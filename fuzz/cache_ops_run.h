// File: cache_ops_run.h
// How the cache_ops fuzzer (cache_ops_fuzzer.cc) reads and runs an input: a cache strategy,
// a configuration and up to 32 operations, each drawn (draws.h) as it runs, since what an
// operation may be depends on the state before it, and checked against the exact history
// model. The fuzzer runs it with InputDraws; the seed writer (corpus_seeds.cc) with a
// DrawEncoder, and corpus_seeds_test.cc with InputDraws over the seeds, collecting the
// boundary classes each input reached.
#ifndef KVCHECK_FUZZ_CACHE_OPS_RUN_H_
#define KVCHECK_FUZZ_CACHE_OPS_RUN_H_

#include <set>
#include <string>
#include <vector>

#include "fuzz/draws.h"
#include "src/cache/registry.h"

namespace kvcheck::fuzz {

// Runs one input on a strategy of `strategies` (chosen by the input). A divergence prints
// the operations and aborts (fuzz_support.h). Returns the operations, one line each; adds
// the boundary classes the run reached to *classes (may be null).
std::vector<std::string> RunCacheOps(Draws& in, const std::vector<const CacheStrategy*>& strategies,
                                     std::set<std::string>* classes);

// Every class the seed corpus covers (over the registry's strategies), in a fixed order:
// "strategy paged", "dtype bf16", "head_dim 129", "batch 4", "kv_heads 8", "initial capacity
// 64", "window 40", "layout broadcast S", "empty prefill", "inactive rows", "fork", "bad
// append rank 3", "length at initial capacity + 1", "length at window - 1", "length at a
// block boundary", "growth", ...
std::vector<std::string> CacheOpsSeedClasses();

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_CACHE_OPS_RUN_H_
