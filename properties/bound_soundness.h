// File: bound_soundness.h
// Soundness and tightness evidence for the error bound (reference/ERROR_BOUND.md): the
// straightforward f32 attention never exceeds the bound on adversarial problems, and the
// observed/bound ratios (largest and median, overall and per problem family) show how tight
// the bound is.
#ifndef KVCHECK_PROPERTIES_BOUND_SOUNDNESS_H_
#define KVCHECK_PROPERTIES_BOUND_SOUNDNESS_H_

#include <cstdint>
#include <map>
#include <string>

#include "properties/property_runner.h"
#include "reference/attention_comparison.h"

namespace kvcheck::properties {

// Ratios collected while the property runs (the property writes into it).
struct SoundnessStats {
  std::map<std::string, reference::RatioStats> by_family;
  reference::RatioStats all;
  int64_t problems = 0;
  int64_t unbounded_elements = 0;
  int64_t hull_bounded_elements = 0;

  // A table: family, elements, max ratio, median ratio.
  std::string Report() const;
};

// "reference/bound_is_sound" with `default_cases` cases, recording into `stats`.
PropertySpec BoundSoundnessProperty(SoundnessStats* stats, int default_cases);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_BOUND_SOUNDNESS_H_
