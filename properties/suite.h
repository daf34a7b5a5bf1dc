// File: suite.h
// The checks the kvcheck command runs, in order, with their default case counts. Every later
// part of the suite (cache state machines, kernel laws, generation equivalence) adds its
// properties here, so the command and this list never drift apart.
#ifndef KVCHECK_PROPERTIES_SUITE_H_
#define KVCHECK_PROPERTIES_SUITE_H_

#include <memory>
#include <vector>

#include "properties/attention_properties.h"
#include "properties/bound_soundness.h"
#include "properties/cache_properties.h"
#include "properties/law_margins.h"
#include "properties/property_runner.h"
#include "properties/subject.h"

namespace kvcheck::properties {

struct Suite {
  // What the properties check; they point into it.
  std::shared_ptr<const Subject> subject;
  std::vector<PropertySpec> properties;
  // Tightness statistics the soundness property fills in while it runs.
  std::unique_ptr<SoundnessStats> soundness = std::make_unique<SoundnessStats>();
  // Commands each cache state machine executed, keyed by property name.
  std::unique_ptr<CacheMachineStatsMap> cache_stats = std::make_unique<CacheMachineStatsMap>();
  // Observed/bound ratios of every attention kernel, per dtype.
  std::unique_ptr<KernelStatsMap> kernel_stats = std::make_unique<KernelStatsMap>();
  // Precision-envelope ratios of every attention kernel, per dtype.
  std::unique_ptr<KernelStatsMap> envelope_stats = std::make_unique<KernelStatsMap>();
  // The margins of the laws that compare with a fixed limit (growth, logits), per law.
  std::unique_ptr<LawMarginMap> law_margins = std::make_unique<LawMarginMap>();
};

// The default kvcheck run: reference soundness (a few hundred problems) and the oracles'
// agreement, then, with twice the test suite's case counts, the tensor-op properties, the
// cache state machine of every registered strategy x dtype, the growth and storage-budget
// laws, the attention kernel laws and the precision envelope of every registered kernel, and
// the generation laws.
Suite DefaultSuite();

// The same for another subject (an external engine, src/engine/): the cache, attention and
// generation laws that apply to what it declares, at the test suite's case counts. The laws about
// kvcheck's own internals (soundness, oracles, tensor ops) run for the built-in engine only.
Suite SuiteFor(std::shared_ptr<const Subject> subject);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_SUITE_H_
