// cache_ops: bytes -> a cache strategy, a configuration and a sequence of cache operations
// (prefill, decode, grow, reset, fork, bad appends), run against the exact history model
// (reference/cache_model.h) after every operation, the way the state machine does:
//   - every branch shows exactly its model's visible set (positions and K/V bits);
//   - row lengths match; views returned earlier keep their bits (clone law);
//   - growth copies at most 3x the appended bytes (amortised strategies);
//   - the counter laws (properties/cache_counter_laws.h) hold from one check to the next;
//   - a bad append fails with the contract's code and changes nothing.
// Any divergence aborts with the decoded operations; sanitizer reports are crashes too.
//
// The decoding and the run are cache_ops_run.cc. Sizes are mostly small (B and KH 1 or 2,
// D up to 8); now and then a size, initial capacity, window, layout or prefill length is one
// of the property generators' boundary values (cache_ops_boundaries.h: D up to 160, B up to
// 4, KH up to 8, prefills that land around capacities, windows and paged blocks), with fewer
// tokens per branch where a token is large.
//
// KVCHECK_FUZZ_DEFECT=<cache defect> fuzzes that defect's strategy instead of the registry.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/cache_ops_run.h"
#include "fuzz/draws.h"
#include "fuzz/engine_under_fuzz.h"
#include "fuzz/fuzz_support.h"
#include "src/cache/registry.h"

namespace kvcheck::fuzz {
namespace {

std::vector<const CacheStrategy*> StrategiesUnderFuzz() {
  if (const defects::Defect* defect = DefectUnderFuzz(defects::DefectKind::kCache)) {
    return {&defect->strategy};
  }
  std::vector<const CacheStrategy*> all;
  if (const FuzzedEngine* engine = EngineUnderFuzz()) {
    for (const CacheStrategy& strategy : engine->strategies) all.push_back(&strategy);
    return all;
  }
  for (const CacheStrategy& strategy : CacheStrategies()) all.push_back(&strategy);
  return all;
}

}  // namespace
}  // namespace kvcheck::fuzz

// Resolves KVCHECK_FUZZ_DEFECT before the first input (an unknown name exits with the list).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kvcheck::fuzz::DefectUnderFuzz(kvcheck::defects::DefectKind::kCache);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<const kvcheck::CacheStrategy*> strategies =
      kvcheck::fuzz::StrategiesUnderFuzz();
  kvcheck::fuzz::InputDraws in(data, size);
  kvcheck::fuzz::RunCacheOps(in, strategies, nullptr);
  return 0;
}
