#include "fuzz/attention_classes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "fuzz/attention_boundaries.h"
#include "src/tensor/dtype.h"

namespace kvcheck::fuzz {
namespace {

// -inf and the finite stand-ins: the values a mask removes keys with.
std::vector<float> RemovingValues() {
  std::vector<float> values = {-INFINITY};
  values.insert(values.end(), std::begin(kMaskSentinels), std::end(kMaskSentinels));
  return values;
}

bool Removes(float x) {
  const std::vector<float> values = RemovingValues();
  return std::find(values.begin(), values.end(), x) != values.end();
}

std::string Entries(float x) { return absl::StrCat("mask removes keys with ", x); }
std::string WholeRows(float x) { return absl::StrCat("mask has whole rows of ", x); }
std::string Mixed(float x) { return absl::StrCat("mask mixes -inf and ", x); }

}  // namespace

std::set<std::string> AttentionClassesOf(const reference::AttentionProblem& p) {
  std::set<std::string> classes = {absl::StrCat("head_dim ", p.head_dim),
                                   absl::StrCat("kv_len ", p.kv_len),
                                   absl::StrCat("dtype ", DTypeName(p.output_dtype))};
  if (p.causal) classes.insert("causal");
  if (p.window > 0) classes.insert("window");
  if (p.mask.empty() && !p.causal && p.window == 0) classes.insert("no mask, causal or window");
  if (p.mask.empty() || p.kv_len == 0) return classes;
  bool minus_infinity = false;
  std::set<float> stand_ins;
  for (size_t row = 0; row < p.mask.size(); row += p.kv_len) {
    const auto begin = p.mask.begin() + row, end = begin + p.kv_len;
    if (Removes(*begin) && std::all_of(begin, end, [&](float x) { return x == *begin; })) {
      classes.insert(WholeRows(*begin));
    }
    for (auto x = begin; x != end; ++x) {
      if (!Removes(*x)) continue;
      classes.insert(Entries(*x));
      if (std::isinf(*x)) {
        minus_infinity = true;
      } else {
        stand_ins.insert(*x);
      }
    }
  }
  if (minus_infinity) {
    for (float x : stand_ins) classes.insert(Mixed(x));
  }
  return classes;
}

std::vector<std::string> AttentionSeedClasses() {
  std::vector<std::string> classes;
  for (int64_t d : kBoundaryHeadDims) classes.push_back(absl::StrCat("head_dim ", d));
  for (int64_t n : kBoundaryKvLens) classes.push_back(absl::StrCat("kv_len ", n));
  for (DType dtype : kAllDTypes) classes.push_back(absl::StrCat("dtype ", DTypeName(dtype)));
  classes.insert(classes.end(), {"no mask, causal or window", "causal", "window"});
  for (float x : RemovingValues()) {
    classes.push_back(Entries(x));
    classes.push_back(WholeRows(x));
    if (!std::isinf(x)) classes.push_back(Mixed(x));
  }
  return classes;
}

}  // namespace kvcheck::fuzz
