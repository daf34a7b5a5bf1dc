// File: storage_budget_property.h
// The storage budget law for one strategy ("cache/<name>/storage_budget"): with a small
// CacheConfig::max_bytes and a random sequence of appends (and resets), a cache never holds
// more than the budget (counters().bytes_held), an append that would pass it fails with
// kResourceExhausted and changes nothing (view, lengths, capacity, counters), and an append
// whose tokens fit the budget succeeds (W slots in every row for a window strategy, else the
// longest row rounded up to 16-token blocks: growth is clamped to the budget, not refused);
// a budget of exactly the most bytes it held without one refuses nothing. The budget counts
// every buffer a cache holds,
// so a cache of many small blocks reaches it like one of a single buffer.
#ifndef KVCHECK_PROPERTIES_STORAGE_BUDGET_PROPERTY_H_
#define KVCHECK_PROPERTIES_STORAGE_BUDGET_PROPERTY_H_

#include "properties/property_runner.h"
#include "src/cache/registry.h"

namespace kvcheck::properties {

PropertySpec StorageBudgetProperty(const CacheStrategy& strategy);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_STORAGE_BUDGET_PROPERTY_H_
