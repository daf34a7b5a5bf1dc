// File: law_margins.h
// How close the laws that compare with a fixed limit came to it: a law's margin is the checked
// quantity over what the law allows (1 or more fails), e.g. the bytes growth copied over 3x the
// bytes appended, or a logit's error over the reference decoder's tolerance. The kernel laws'
// error / bound ratios have their own statistics (attention_properties.h); these are the
// others, so that the run's summary can name the worst margin of every area.
//
// A law records inside its isolated check (case_isolation.h) and returns the encoded margins
// as the check's payload; the parent merges them into the suite's map.
#ifndef KVCHECK_PROPERTIES_LAW_MARGINS_H_
#define KVCHECK_PROPERTIES_LAW_MARGINS_H_

#include <map>
#include <string>
#include <string_view>

#include "reference/attention_comparison.h"

namespace kvcheck::properties {

// Keyed by "<area>/<what is compared>", e.g. "cache/growth copies / 3x appended".
using LawMarginMap = std::map<std::string, reference::RatioStats>;

std::string EncodeLawMargins(const LawMarginMap& margins);
// One case's margin of one law, encoded: what a law's isolated check returns.
std::string EncodeLawMargin(const std::string& law, double margin);
// Adds the margins of `wire` (EncodeLawMargins' output) to *margins; a null map ignores them.
void MergeLawMargins(std::string_view wire, LawMarginMap* margins);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_LAW_MARGINS_H_
