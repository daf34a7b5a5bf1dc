// File: cache_properties.h
// The cache properties: one state machine per registered strategy and dtype
// (cache_machine.h), and the growth law over long append sequences.
#ifndef KVCHECK_PROPERTIES_CACHE_PROPERTIES_H_
#define KVCHECK_PROPERTIES_CACHE_PROPERTIES_H_

#include <map>
#include <string>
#include <vector>

#include "properties/cache_machine.h"
#include "properties/law_margins.h"
#include "properties/property_runner.h"
#include "properties/subject.h"

namespace kvcheck::properties {

// Per-property command counts, keyed by property name, filled while the properties run.
using CacheMachineStatsMap = std::map<std::string, CacheMachineStats>;

// Every state machine of the subject's strategies x the dtypes each takes (recording into
// *stats), then the growth law of each strategy whose buffers grow (amortised growth, not a
// fixed window), then the storage budget law of every strategy (storage_budget_property.h);
// the last two for strategies that report their storage. The growth laws record their margins
// into *margins (may be null).
// REQUIRES: `subject` outlives the properties.
std::vector<PropertySpec> CacheProperties(CacheMachineStatsMap* stats, const Subject& subject,
                                          LawMarginMap* margins = nullptr);

// Growth law for one strategy ("cache/<name>/growth_law"): over long sequences of appends of
// random sizes, bytes copied by growth never exceed 3x the bytes appended. Records the largest
// copied / (3x appended) of each case into *margins (may be null).
PropertySpec GrowthLawProperty(const CacheStrategy& strategy, LawMarginMap* margins = nullptr);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_CACHE_PROPERTIES_H_
