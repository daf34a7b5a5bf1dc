#include "properties/cache_counter_laws.h"

#include "absl/strings/str_cat.h"

namespace kvcheck::properties {
namespace {

std::string ToString(const CounterObservation& o) {
  const CacheCounters& c = o.counters;
  return absl::StrCat("allocated ", c.bytes_allocated, ", held ", c.bytes_held, ", appended ",
                      c.bytes_appended, ", growth copied ", c.bytes_growth_copied,
                      ", other copied ", c.bytes_other_copied, " (capacity ", o.capacity, ")");
}

// The first law `now` breaks, or nullptr.
const char* BrokenLaw(const CounterObservation& was, const CounterObservation& now,
                      const CounterLawContext& context) {
  const CacheCounters& a = was.counters;
  const CacheCounters& b = now.counters;
  if (b.bytes_allocated < a.bytes_allocated || b.bytes_appended < a.bytes_appended ||
      b.bytes_growth_copied < a.bytes_growth_copied ||
      b.bytes_other_copied < a.bytes_other_copied) {
    return "a count of bytes allocated, appended or copied went down";
  }
  if (!context.acted) {
    const bool same = b.bytes_allocated == a.bytes_allocated && b.bytes_held == a.bytes_held &&
                      b.bytes_appended == a.bytes_appended &&
                      b.bytes_growth_copied == a.bytes_growth_copied &&
                      b.bytes_other_copied == a.bytes_other_copied && now.capacity == was.capacity;
    return same ? nullptr : "changed by a command that did not act on it";
  }
  const int64_t allocated = b.bytes_allocated - a.bytes_allocated;
  const int64_t grown = b.bytes_growth_copied - a.bytes_growth_copied;
  const int64_t copied = grown + (b.bytes_other_copied - a.bytes_other_copied);
  if (copied > allocated) return "copied more bytes than it allocated to copy them into";
  if (b.bytes_held > a.bytes_held + allocated) {
    return "holds more bytes than it held before plus what it allocated";
  }
  if (grown > 0 && now.capacity <= was.capacity) {
    return "counted growth copies without a larger capacity";
  }
  if (b.bytes_held == 0 && allocated > 0) return "allocated bytes but holds none";
  if (!context.amortized_growth || context.may_share_buffers) return nullptr;
  if (b.bytes_other_copied != a.bytes_other_copied) {
    return "copied bytes other than by growth though it shares no buffers (no Fork since its "
           "last Reset)";
  }
  if (now.capacity == was.capacity && was.capacity > 0 &&
      (copied != 0 || allocated != b.bytes_held - a.bytes_held)) {
    return "with the same capacity and no shared buffers, it copied or allocated bytes it does "
           "not hold (a buffer replaced without growing)";
  }
  return nullptr;
}

}  // namespace

CounterObservation ObserveCounters(const KvCache& cache) {
  return {cache.counters(), cache.capacity()};
}

std::string DescribeCounterLawBreak(const CounterObservation& was, const CounterObservation& now,
                                    const CounterLawContext& context) {
  const char* law = BrokenLaw(was, now, context);
  if (law == nullptr) return "";
  return absl::StrCat(law, "; before the command ", ToString(was), ", after ", ToString(now));
}

}  // namespace kvcheck::properties
