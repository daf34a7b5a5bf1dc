// File: attention_classes.h
// The boundary classes of an attention case, by name, and the ones the attention seed corpus
// must cover (corpus_seeds_test.cc): each head size and key count of attention_boundaries.h,
// each dtype, and each kind of mask (none, causal, window, removed keys as -inf or as each
// finite stand-in, whole rows of each, -inf and a stand-in in one mask).
#ifndef KVCHECK_FUZZ_ATTENTION_CLASSES_H_
#define KVCHECK_FUZZ_ATTENTION_CLASSES_H_

#include <set>
#include <string>
#include <vector>

#include "reference/reference_attention.h"

namespace kvcheck::fuzz {

// "head_dim 128", "kv_len 513", "dtype bf16", "no mask, causal or window", "causal",
// "window", "mask removes keys with -inf", "mask removes keys with -1e+09", "mask has whole
// rows of -1e+30", "mask mixes -inf and -65504", ...
std::set<std::string> AttentionClassesOf(const reference::AttentionProblem& p);

// Every class the seed corpus covers, in a fixed order.
std::vector<std::string> AttentionSeedClasses();

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_ATTENTION_CLASSES_H_
