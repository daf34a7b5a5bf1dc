// File: property_driver.h
// Drives one RapidCheck property: generates cases until one fails or the case budget is
// spent, then shrinks the failing case within a budget of attempts and seconds.
//
// This replaces RapidCheck's own driver (rc::detail::checkProperty), whose shrinking has no
// limit (a kernel-law failure once shrank for more than 11 minutes against the 50-digit
// reference), re-runs the minimal case once more after shrinking, and accepts any failure as
// a smaller counterexample. Here:
//   - shrinking stops at DriverOptions::shrink_seconds or shrink_attempts, whichever comes
//     first, and the result says so; the smallest failing case found so far is reported;
//   - a shrink attempt counts as "still failing" only if it fails the same way or worse: a
//     case that failed by assertion or crash never shrinks into one that times out (each such
//     attempt would cost a whole case timeout, and a hang is a different bug);
//   - the reproduce value (random, size, shrink path) is RapidCheck's, so RapidCheck's
//     reproduce strings replay here and the other way round.
// Generation, shrink trees and counterexample printing are RapidCheck's.
#ifndef KVCHECK_PROPERTIES_PROPERTY_DRIVER_H_
#define KVCHECK_PROPERTIES_PROPERTY_DRIVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "properties/case_isolation.h"
#include "rapidcheck.h"

namespace kvcheck::properties {

struct DriverProgress {
  bool shrinking = false;
  int cases = 0;             // successful cases so far
  int shrink_attempts = 0;   // shrink candidates evaluated so far
  int shrinks_accepted = 0;  // of which still failed (the counterexample got smaller)
  double shrink_seconds = 0;
};

struct DriverOptions {
  uint64_t seed = 0;
  int cases = 100;
  int max_size = 100;         // the size ramp ends here
  int max_discard_ratio = 10;  // give up after this many discards per requested case
  double shrink_seconds = 20;
  int shrink_attempts = 5000;
  // Generation stops at this time (steady clock) even if fewer than `cases` ran; a failing
  // case found before it is still shrunk within the shrink budget. Unset: no limit.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Replay exactly this case (no search, no shrinking) instead of searching.
  std::optional<rc::detail::Reproduce> reproduce;
  // Called after every case and every shrink attempt.
  std::function<void(const DriverProgress&)> progress;
};

struct DriverResult {
  // kReproducedCasePasses: the reproduce value's case exists and passes (counterexample is
  // that case); kNotReproduced: the value does not name a case of this property.
  enum class Kind { kPassed, kFailed, kGaveUp, kNotReproduced, kReproducedCasePasses };
  Kind kind = Kind::kPassed;
  int successes = 0;
  int discards = 0;
  rc::detail::Distribution distribution;  // RC_TAG / RC_CLASSIFY of the successful cases
  // kFailed: the smallest failing case found, with its reproduce value.
  std::string description;        // the failure message (or why reproduction failed)
  rc::detail::Example counterexample;
  rc::detail::Reproduce reproduce;
  CaseEnd end = CaseEnd::kNone;    // how the reported case ended (assertion, crash, timeout)
  int shrink_attempts = 0;
  int shrinks_accepted = 0;
  bool shrink_budget_exhausted = false;
  bool stopped_at_deadline = false;  // generation stopped at DriverOptions::deadline
  double search_seconds = 0;  // until the first failure (or the end of the run)
  double shrink_seconds = 0;
};

DriverResult DriveProperty(const rc::detail::Property& property, const DriverOptions& options);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_PROPERTY_DRIVER_H_
