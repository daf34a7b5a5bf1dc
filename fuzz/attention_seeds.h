// File: attention_seeds.h
// The attention seed corpus as plans (draw_encoder.h): for each boundary class of
// attention_classes.h, inputs that decode to it, spread over the kernels and dtypes. And the
// attention regressions, re-derived the same way so that they keep what they were saved for.
#ifndef KVCHECK_FUZZ_ATTENTION_SEEDS_H_
#define KVCHECK_FUZZ_ATTENTION_SEEDS_H_

#include <string>
#include <vector>

#include "fuzz/draw_encoder.h"

namespace kvcheck::fuzz {

// Seeds for the target whose kernels (in the order it picks from) are `kernel_names`.
std::vector<PlannedInput> AttentionSeeds(const std::vector<std::string>& kernel_names);

// The attention target's regressions (fuzz/regressions/attention/), named by what each
// reproduces; none for a target without the naive kernel.
std::vector<PlannedInput> AttentionRegressions(const std::vector<std::string>& kernel_names);

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_ATTENTION_SEEDS_H_
