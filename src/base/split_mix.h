// File: split_mix.h
// SplitMix64: the small, fast, seedable generator behind every reproducible stream of values
// in kvcheck (untrained weights, seeded sampling, generated attention values). Not for
// anything that needs statistical strength beyond that.
#ifndef KVCHECK_SRC_BASE_SPLIT_MIX_H_
#define KVCHECK_SRC_BASE_SPLIT_MIX_H_

#include <cstdint>

namespace kvcheck {

// Advances `state` and returns the next 64-bit value (Steele, Lea and Flood's SplitMix64).
inline uint64_t SplitMix64(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace kvcheck

#endif  // KVCHECK_SRC_BASE_SPLIT_MIX_H_
