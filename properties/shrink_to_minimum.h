// File: shrink_to_minimum.h
// Test support: the counterexample a generator shrinks to for a synthetic failure. A property
// draws from `gen` and fails whenever `fails` holds; the driver (property_driver.h) shrinks it
// with a large budget, in process, and the case it last failed on (every failing shrink
// candidate is accepted, so the last one is the counterexample) is returned. A generator
// shrinks well when that case has every size the failure does not need at its minimum and
// every optional feature the failure does not need off.
#ifndef KVCHECK_PROPERTIES_SHRINK_TO_MINIMUM_H_
#define KVCHECK_PROPERTIES_SHRINK_TO_MINIMUM_H_

#include <functional>
#include <optional>
#include <string>

#include "properties/property_runner.h"
#include "rapidcheck.h"

namespace kvcheck::properties {

struct Shrunk {
  bool failed = false;     // the property found a failing case at all
  int shrinks = 0;         // accepted shrinks
  int attempts = 0;        // shrink candidates tried
  bool budget_exhausted = false;
};

template <typename T>
std::optional<T> ShrinkToMinimum(const rc::Gen<T>& gen, const std::function<bool(const T&)>& fails,
                                 Shrunk* shrunk = nullptr, int cases = 3000) {
  std::optional<T> last;
  PropertySpec spec{"test/shrink_to_minimum", cases, [&] {
                      const T value = *gen;
                      if (fails(value)) {
                        last = value;
                        RC_FAIL("the synthetic failure");
                      }
                    }};
  RunOptions options;
  options.isolation.mode = Isolation::kInProcess;
  options.shrink_attempts = 100000;
  options.shrink_seconds = 120;
  const PropertyOutcome outcome = RunProperty(spec, options);
  if (shrunk != nullptr) {
    shrunk->failed = !outcome.passed;
    shrunk->shrinks = outcome.shrinks_accepted;
    shrunk->attempts = outcome.shrink_attempts;
    shrunk->budget_exhausted = outcome.shrink_budget_exhausted;
  }
  if (outcome.passed) return std::nullopt;
  return last;
}

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_SHRINK_TO_MINIMUM_H_
