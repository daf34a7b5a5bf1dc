// File: straightforward_attention.h
// The plainest correct f32 attention: for each query row, compute every allowed score in
// f32 (dot loop, times the f32 scale, softcap, ALiBi, mask), take the max, exp(s - max) with
// std::exp, sum, and the weighted sum of v divided by the sum; round once to the output
// dtype. Two passes, no tricks. It is the witness for the soundness of the error bound:
// a correct f32 implementation must never exceed it.
#ifndef KVCHECK_PROPERTIES_STRAIGHTFORWARD_ATTENTION_H_
#define KVCHECK_PROPERTIES_STRAIGHTFORWARD_ATTENTION_H_

#include <vector>

#include "reference/attention_problem.h"

namespace kvcheck::properties {

// Output (B, H, Sq, D) row-major, widened to float. Same semantics as the reference:
// rows without allowed keys are 0, NaN propagates. Only the problem's checked_rows are
// computed when it names some (the others are 0).
std::vector<float> StraightforwardAttention(const reference::AttentionProblem& problem);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_STRAIGHTFORWARD_ATTENTION_H_
