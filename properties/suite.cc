#include "properties/suite.h"

#include "properties/tensor_properties.h"

namespace kvcheck::properties {

Suite DefaultSuite() {
  Suite suite;
  suite.properties.push_back(BoundSoundnessProperty(suite.soundness.get(), 300));
  for (PropertySpec& spec : TensorProperties()) suite.properties.push_back(std::move(spec));
  return suite;
}

}  // namespace kvcheck::properties
