#include "properties/subject.h"

namespace kvcheck::properties {

uint32_t Subject::common_kernel_features() const {
  uint32_t features = kAllKernelFeatures;
  for (const AttentionKernel& kernel : kernels) features &= kernel.features;
  return features;
}

uint32_t Subject::common_kernel_dtypes() const {
  uint32_t dtypes = 0x7;
  for (const AttentionKernel& kernel : kernels) dtypes &= kernel.dtypes;
  return dtypes;
}

const Subject& BuiltinSubject() {
  static const Subject* const subject = [] {
    auto* s = new Subject;
    s->name = "kvcheck";
    s->builtin = true;
    for (const CacheStrategy& strategy : CacheStrategies()) s->strategies.push_back(strategy);
    for (const AttentionKernel& kernel : AttentionKernels()) s->kernels.push_back(kernel);
    return s;
  }();
  return *subject;
}

}  // namespace kvcheck::properties
