// File: attention_generators.h
// Generators of attention problems (reference::AttentionProblem): general ones covering the whole
// attention contract (src/attention/attention_params.h), and adversarial ones aimed at the error
// bound (scores near the exp underflow gap, cancellation in v, long rows, near-ties, huge scores,
// subnormals, half-precision inputs and outputs, scores around 2^40 whose gaps no exp can
// represent, and tiny scores with values of both signs whose exact outputs cancel to ~1e-90).
#ifndef KVCHECK_PROPERTIES_ATTENTION_GENERATORS_H_
#define KVCHECK_PROPERTIES_ATTENTION_GENERATORS_H_

#include <ostream>
#include <string>

#include "rapidcheck.h"
#include "reference/attention_problem.h"

namespace kvcheck::properties {

// An attention problem and the family it was drawn from (for per-family statistics).
struct LabeledProblem {
  std::string family;
  reference::AttentionProblem problem;
};

// Adversarial problems for the bound-soundness check, kept small enough for the Real
// reference (at most a few thousand (row, key) pairs).
rc::Gen<LabeledProblem> GenAdversarialProblem();

void showValue(const LabeledProblem& labeled, std::ostream& os);

}  // namespace kvcheck::properties

namespace kvcheck::reference {
// RapidCheck prints counterexamples with this (found by argument-dependent lookup).
void showValue(const AttentionProblem& problem, std::ostream& os);
}  // namespace kvcheck::reference

#endif  // KVCHECK_PROPERTIES_ATTENTION_GENERATORS_H_
