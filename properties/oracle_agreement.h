// File: oracle_agreement.h
// "reference/oracles_agree": the reference's number types against each other. On the
// adversarial problems of the soundness check (attention_generators.h, extreme score gaps and
// tiny cancelling outputs included), the double-double oracle (the default) and the 50-digit
// Real oracle agree with a 100-digit ground truth: the same expectation for every element,
// values within each oracle's stated guarantee (reference_attention.h:
// unit * (Skv + D + 16) * magnitude + 2^-53 |value| + 2^-1000), and bounds equal to one part in
// 10^6. This is what licenses the fast oracle for the bulk of the checks.
#ifndef KVCHECK_PROPERTIES_ORACLE_AGREEMENT_H_
#define KVCHECK_PROPERTIES_ORACLE_AGREEMENT_H_

#include "properties/property_runner.h"

namespace kvcheck::properties {

PropertySpec OracleAgreementProperty(int default_cases);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_ORACLE_AGREEMENT_H_
