// File: draw_encoder.h
// The inverse of InputDraws (draws.h): run a target's decoding with a DrawEncoder as its
// Draws, and each draw returns the value a plan names for that decision (in order, for a
// decision drawn several times; the draw's minimum where the plan names none) while the
// encoder records the bytes that make InputDraws decode that value. Bytes() is then an input
// that decodes to the planned values: the seed corpus is written this way (corpus_seeds.cc).
#ifndef KVCHECK_FUZZ_DRAW_ENCODER_H_
#define KVCHECK_FUZZ_DRAW_ENCODER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/draws.h"

namespace kvcheck::fuzz {

// Decision name -> the values of its successive draws.
using DrawPlan = std::map<std::string, std::vector<int64_t>, std::less<>>;

// A plan and the name of the file its bytes go to ("seed-..." for a corpus).
struct PlannedInput {
  std::string name;
  DrawPlan plan;
};

class DrawEncoder final : public Draws {
 public:
  explicit DrawEncoder(DrawPlan plan) : plan_(std::move(plan)) {}

  int64_t Int(std::string_view what, int64_t min, int64_t max) override;
  // Whether the plan holds another value for `what`. Where it does, Bytes() keeps a byte
  // after this point (InputDraws::More asks whether one remains), even a byte of zeros.
  bool More(std::string_view what) override;

  // The input: every draw's bytes, the last draw's first (the provider reads integers from
  // the end of the input, the most significant byte first). Draws at their minimum at the end
  // of the decoding are left out: an exhausted input draws the minimum.
  std::vector<uint8_t> Bytes() const;

  // Planned values the decoding never drew, or that lay outside their draw's range (each in
  // words): a plan that no longer fits the decoding. Empty when the input is what was planned.
  std::vector<std::string> Errors() const;

 private:
  DrawPlan plan_;
  std::map<std::string, size_t, std::less<>> used_;  // values taken per decision
  std::vector<std::string> errors_;
  // Each draw's bytes in the order the provider reads them.
  std::vector<std::vector<uint8_t>> draws_;
  size_t more_at_ = 0;  // draws_ before the last More() that returned true; 0: none yet
  bool more_ = false;
};

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_DRAW_ENCODER_H_
