// File: draws.h
// Every decision a fuzz target takes from its input goes through Draws::Int. The fuzzer reads
// its input with InputDraws; the seed writer (draw_encoder.h) runs the same decoding with an
// encoder in its place, which returns the values it was told to and writes the bytes that
// InputDraws decodes to them. One decoding, run both ways, cannot drift from its seeds.
#ifndef KVCHECK_FUZZ_DRAWS_H_
#define KVCHECK_FUZZ_DRAWS_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "fuzzer/FuzzedDataProvider.h"

namespace kvcheck::fuzz {

class Draws {
 public:
  virtual ~Draws() = default;
  // A value in [min, max] (min <= max). `what` names the decision: an encoder's plan refers
  // to it by that name.
  virtual int64_t Int(std::string_view what, int64_t min, int64_t max) = 0;
  // Whether the input goes on, asked before each step of a decoding that reads until its
  // input runs out (a sequence of operations, each starting with a draw named `what`).
  virtual bool More(std::string_view what) = 0;

  bool Bool(std::string_view what) { return Int(what, 0, 1) != 0; }
  // One of `choices`, by its index.
  template <typename T>
  T Pick(std::string_view what, std::initializer_list<T> choices) {
    return choices.begin()[Int(what, 0, static_cast<int64_t>(choices.size()) - 1)];
  }
  template <typename T, size_t N>
  T Pick(std::string_view what, const T (&choices)[N]) {
    return choices[Int(what, 0, static_cast<int64_t>(N) - 1)];
  }
};

// The fuzzer's side: each draw is FuzzedDataProvider::ConsumeIntegralInRange<int64_t>, which
// reads as many bytes from the end of the input as the range needs (none for a single value,
// one for up to 256 values, ...) and takes the result modulo the range's size; an exhausted
// input draws the minimum. A draw over the same range of another integer type, and
// ConsumeBool, read the same bytes the same way, so inputs written for the provider's typed
// calls keep their meaning.
class InputDraws final : public Draws {
 public:
  InputDraws(const uint8_t* data, size_t size) : in_(data, size) {}
  int64_t Int(std::string_view, int64_t min, int64_t max) override {
    return in_.ConsumeIntegralInRange<int64_t>(min, max);
  }
  // Bytes remain.
  bool More(std::string_view) override { return in_.remaining_bytes() > 0; }
  size_t remaining_bytes() { return in_.remaining_bytes(); }

 private:
  FuzzedDataProvider in_;
};

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_DRAWS_H_
