// File: attention_decoding.h
// How the attention fuzzers (attention_fuzzer.cc) read an input: one attention call, its
// values described in words, and the kernel to run. The fuzzers decode with InputDraws; the
// seed writer (corpus_seeds.cc) runs the same function with a DrawEncoder, and
// corpus_seeds_test.cc decodes the corpus with it to check what the corpus covers.
#ifndef KVCHECK_FUZZ_ATTENTION_DECODING_H_
#define KVCHECK_FUZZ_ATTENTION_DECODING_H_

#include <cstddef>
#include <string>

#include "fuzz/draws.h"
#include "properties/kernel_case.h"

namespace kvcheck::fuzz {

struct AttentionInput {
  properties::KernelCase kernel_case;
  std::string values;  // amplitude, seed and special values, for the failure report
  size_t kernel = 0;   // index among the `kernel_count` kernels the target runs
};

AttentionInput DecodeAttentionInput(Draws& in, size_t kernel_count);

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_ATTENTION_DECODING_H_
