#include "properties/property_driver.h"

#include <chrono>
#include <utility>

#include "rapidcheck/shrinkable/Operations.h"

namespace kvcheck::properties {
namespace {

using rc::detail::CaseDescription;
using rc::detail::CaseResult;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The size for the i-th successful case: an even ramp from 0 to max_size over the run, so a
// short run still reaches the largest size and a long one revisits every size.
int SizeFor(int i, int cases, int max_size) {
  if (cases <= 1) return max_size;
  return static_cast<int>(static_cast<int64_t>(i % cases) * max_size / (cases - 1));
}

// Evaluates one candidate, noting how it ended (assertion failure, crash or timeout).
CaseDescription Evaluate(const rc::Shrinkable<CaseDescription>& candidate, CaseEnd* end) {
  ClearLastCaseEnd();
  CaseDescription description = candidate.value();
  *end = description.result.type == CaseResult::Type::Failure ? LastCaseEnd() : CaseEnd::kNone;
  return description;
}

// A smaller case replaces the current counterexample only if it fails the same way or worse
// (see property_driver.h).
bool StillFails(const CaseDescription& candidate, CaseEnd candidate_end, CaseEnd original_end) {
  if (candidate.result.type != CaseResult::Type::Failure) return false;
  return candidate_end != CaseEnd::kTimeout || original_end == CaseEnd::kTimeout;
}

void RecordFailure(const CaseDescription& description, CaseEnd end, DriverResult& result) {
  result.kind = DriverResult::Kind::kFailed;
  result.description = description.result.description;
  result.counterexample = description.example();
  result.end = end;
}

DriverResult Reproduce(const rc::detail::Property& property, const DriverOptions& options) {
  DriverResult result;
  const rc::detail::Reproduce& reproduce = *options.reproduce;
  result.reproduce = reproduce;
  const rc::Shrinkable<CaseDescription> root = property(reproduce.random, reproduce.size);
  const rc::Maybe<rc::Shrinkable<CaseDescription>> minimal =
      rc::shrinkable::walkPath(root, reproduce.shrinkPath);
  if (!minimal) {
    result.kind = DriverResult::Kind::kNotReproduced;
    result.description = "the reproduce string's shrink path does not exist in this property "
                         "(was it made by another version or another property?)";
    return result;
  }
  CaseEnd end;
  const CaseDescription description = Evaluate(*minimal, &end);
  if (description.result.type != CaseResult::Type::Failure) {
    result.kind = DriverResult::Kind::kReproducedCasePasses;
    result.description = "the reproduced case passes now";
    result.counterexample = description.example();
    return result;
  }
  RecordFailure(description, end, result);
  return result;
}

}  // namespace

DriverResult DriveProperty(const rc::detail::Property& property, const DriverOptions& options) {
  if (options.reproduce.has_value()) return Reproduce(property, options);
  DriverResult result;
  DriverProgress progress;
  const Clock::time_point start = Clock::now();
  rc::Random random(options.seed);
  const int max_discards = options.max_discard_ratio * options.cases;
  int recent_discards = 0;

  // Search: the first failing case.
  std::optional<rc::Shrinkable<CaseDescription>> failing;
  CaseDescription failing_description;
  CaseEnd failing_end = CaseEnd::kNone;
  while (result.successes < options.cases) {
    if (options.deadline.has_value() && Clock::now() >= *options.deadline) {
      result.stopped_at_deadline = true;
      break;
    }
    const int size =
        SizeFor(result.successes, options.cases, options.max_size) + recent_discards / 10;
    const rc::Random case_random = random.split();
    rc::Shrinkable<CaseDescription> shrinkable = property(case_random, size);
    CaseEnd end;
    CaseDescription description = Evaluate(shrinkable, &end);
    const CaseResult::Type type = description.result.type;
    if (type == CaseResult::Type::Failure) {
      failing = std::move(shrinkable);
      failing_description = std::move(description);
      failing_end = end;
      result.reproduce.random = case_random;
      result.reproduce.size = size;
      break;
    }
    if (type == CaseResult::Type::Discard) {
      ++result.discards;
      ++recent_discards;
      if (result.discards > max_discards) {
        result.kind = DriverResult::Kind::kGaveUp;
        result.description = description.result.description;
        result.search_seconds = SecondsSince(start);
        return result;
      }
      continue;
    }
    ++result.successes;
    recent_discards = 0;
    if (!description.tags.empty()) ++result.distribution[description.tags];
    progress.cases = result.successes;
    if (options.progress) options.progress(progress);
  }
  result.search_seconds = SecondsSince(start);
  if (!failing.has_value()) return result;

  // Shrink within the budget: walk to the first smaller candidate that still fails, repeat.
  const Clock::time_point shrink_start = Clock::now();
  progress.shrinking = true;
  rc::Shrinkable<CaseDescription> best = *failing;
  CaseDescription best_description = failing_description;
  CaseEnd best_end = failing_end;
  rc::Seq<rc::Shrinkable<CaseDescription>> candidates = best.shrinks();
  size_t index = 0;
  while (true) {
    if (result.shrink_attempts >= options.shrink_attempts ||
        SecondsSince(shrink_start) >= options.shrink_seconds) {
      result.shrink_budget_exhausted = true;
      break;
    }
    rc::Maybe<rc::Shrinkable<CaseDescription>> candidate = candidates.next();
    if (!candidate) break;
    CaseEnd end;
    CaseDescription description = Evaluate(*candidate, &end);
    ++result.shrink_attempts;
    if (StillFails(description, end, failing_end)) {
      best = std::move(*candidate);
      best_description = std::move(description);
      best_end = end;
      candidates = best.shrinks();
      result.reproduce.shrinkPath.push_back(index);
      index = 0;
      ++result.shrinks_accepted;
    } else {
      ++index;
    }
    progress.shrink_attempts = result.shrink_attempts;
    progress.shrinks_accepted = result.shrinks_accepted;
    progress.shrink_seconds = SecondsSince(shrink_start);
    if (options.progress) options.progress(progress);
  }
  result.shrink_seconds = SecondsSince(shrink_start);
  RecordFailure(best_description, best_end, result);
  return result;
}

}  // namespace kvcheck::properties
