// File: fuzz_support.h
// What the fuzz targets share: the trace of the operations an input decoded to (printed when
// the target reports a divergence, so a crash file explains itself), the failure report, the
// defect switch, and seeded values.
#ifndef KVCHECK_FUZZ_FUZZ_SUPPORT_H_
#define KVCHECK_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "defects/defect_registry.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "src/tensor/dtype.h"

namespace kvcheck::fuzz {

// The operations decoded from the current input, one line each. Reset per input.
class Trace {
 public:
  void Clear() { lines_.clear(); }
  template <typename... Args>
  void Add(const Args&... args) {
    lines_.push_back(absl::StrCat(args...));
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::vector<std::string> lines_;
};

// Prints "kvcheck fuzz: <target>: <what>", the trace, and aborts: libFuzzer (and the replay
// test) report the abort as a crash and keep the input.
[[noreturn]] void Fail(const char* target, const Trace& trace, const std::string& what);

// The defect named by the environment variable KVCHECK_FUZZ_DEFECT, or nullptr when it is
// unset or empty. Exits with the list of defects of `kind` when the name is unknown or of
// another kind. The result is computed once per process.
const defects::Defect* DefectUnderFuzz(defects::DefectKind kind);

// One of `choices`, chosen by the input.
template <typename T>
T Pick(FuzzedDataProvider& in, std::initializer_list<T> choices) {
  return choices.begin()[in.ConsumeIntegralInRange<size_t>(0, choices.size() - 1)];
}
template <typename T, size_t N>
T Pick(FuzzedDataProvider& in, const T (&choices)[N]) {
  return choices[in.ConsumeIntegralInRange<size_t>(0, N - 1)];
}

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_FUZZ_SUPPORT_H_
