#include "properties/suite.h"

#include "properties/generation_properties.h"
#include "properties/oracle_agreement.h"
#include "properties/tensor_properties.h"

namespace kvcheck::properties {

// Every property runs the test suite's case count (the soundness check a few hundred instead
// of its 10,000): with the double-double oracle and cheap case generation the whole run takes
// about two minutes on two cores (README "kvcheck's default run").
Suite DefaultSuite() {
  Suite suite;
  suite.properties.push_back(BoundSoundnessProperty(suite.soundness.get(), 300));
  suite.properties.push_back(OracleAgreementProperty(60));
  for (PropertySpec& spec : TensorProperties()) suite.properties.push_back(std::move(spec));
  for (PropertySpec& spec : CacheProperties(suite.cache_stats.get())) {
    suite.properties.push_back(std::move(spec));
  }
  for (PropertySpec& spec :
       AttentionProperties(suite.kernel_stats.get(), suite.envelope_stats.get())) {
    suite.properties.push_back(std::move(spec));
  }
  // Generation equivalence on small decoders for every strategy (seed 004's check).
  for (PropertySpec& spec : GenerationProperties()) suite.properties.push_back(std::move(spec));
  return suite;
}

}  // namespace kvcheck::properties
