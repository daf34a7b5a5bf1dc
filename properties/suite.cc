#include "properties/suite.h"

#include "properties/generation_properties.h"
#include "properties/oracle_agreement.h"
#include "properties/tensor_properties.h"

namespace kvcheck::properties {

// Twice the test suite's case count for every law (the soundness check a few hundred instead
// of its 10,000): with the double-double oracle and cheap case generation the whole run,
// defect catalogue included, takes about two and a half minutes on two cores.
constexpr int kCaseFactor = 2;

Suite DefaultSuite() {
  Suite suite;
  suite.properties.push_back(BoundSoundnessProperty(suite.soundness.get(), 300));
  suite.properties.push_back(OracleAgreementProperty(60));
  std::vector<PropertySpec> laws = TensorProperties();
  for (PropertySpec& spec : CacheProperties(suite.cache_stats.get())) laws.push_back(spec);
  for (PropertySpec& spec :
       AttentionProperties(suite.kernel_stats.get(), suite.envelope_stats.get())) {
    laws.push_back(spec);
  }
  // Generation equivalence on small decoders for every strategy (seed 004's check).
  for (PropertySpec& spec : GenerationProperties()) laws.push_back(spec);
  for (PropertySpec& spec : laws) {
    spec.default_cases *= kCaseFactor;
    suite.properties.push_back(std::move(spec));
  }
  return suite;
}

}  // namespace kvcheck::properties
