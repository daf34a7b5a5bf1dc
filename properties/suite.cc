#include "properties/suite.h"

#include <algorithm>

#include "properties/generation_properties.h"
#include "properties/tensor_properties.h"

namespace kvcheck::properties {

Suite DefaultSuite() {
  Suite suite;
  suite.properties.push_back(BoundSoundnessProperty(suite.soundness.get(), 300));
  for (PropertySpec& spec : TensorProperties()) suite.properties.push_back(std::move(spec));
  for (PropertySpec& spec : CacheProperties(suite.cache_stats.get())) {
    spec.default_cases = std::max(1, spec.default_cases / 2);
    suite.properties.push_back(std::move(spec));
  }
  for (PropertySpec& spec :
       AttentionProperties(suite.kernel_stats.get(), suite.envelope_stats.get())) {
    spec.default_cases = std::max(1, spec.default_cases / 3);
    suite.properties.push_back(std::move(spec));
  }
  // Generation equivalence on small decoders for every strategy (seed 004's check).
  for (PropertySpec& spec : GenerationProperties()) {
    spec.default_cases = std::max(1, spec.default_cases / 2);
    suite.properties.push_back(std::move(spec));
  }
  return suite;
}

}  // namespace kvcheck::properties
