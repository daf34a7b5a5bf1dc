// File: precision_envelope.h
// The precision envelope: a second verdict beside the derived error bound. The bound is sound
// but, in f32, two to three orders of magnitude above the errors correct kernels make, so a
// kernel whose accuracy regresses 20x can still pass it. The envelope compares a kernel with
// the straightforward f32 attention (straightforward_attention.h) on the same inputs, the way
// FlashAttention's tests compare with a same-precision baseline:
//
//   for every element e of a class:  |kernel_e - exact_e| / m_e  <=
//       kEnvelopeFactor * max_{e' in class} |baseline_e' - exact_e'| / m_e'
//       + kEnvelopeFloorUlps * u_out + kEnvelopeScoreUlps * u * S_e
//
// where m_e = sum_j p_j |v_jd| (the natural magnitude of the element: errors of a softmax-
// weighted sum scale with it), u_out the unit roundoff of the output dtype, u = 2^-24, and
// S_e the row's score scale (the largest |scale| sum_d |q_d k_d| or |score|): a correct
// kernel may round each score once more than the baseline does (an exp2-based softmax
// multiplies scores by log2 e) and sums its dot products in another order, which moves the
// weights by a few u * S relative, so large scores earn an allowance of their own. The classes are
// the well-conditioned elements (|exact| >= m / 4) and the cancelling ones (|exact| < m / 4),
// over the bounded elements of the checked rows. Failing it is reported as a "precision
// regression" with the ratio, never folded into the bound. The constants were calibrated on
// long runs of every registered kernel and dtype (docs/reference-oracle.md).
#ifndef KVCHECK_PROPERTIES_PRECISION_ENVELOPE_H_
#define KVCHECK_PROPERTIES_PRECISION_ENVELOPE_H_

#include <string>

#include "absl/types/span.h"
#include "reference/reference_attention.h"
#include "src/tensor/dtype.h"

namespace kvcheck::properties {

inline constexpr double kEnvelopeFactor = 2.0;
inline constexpr double kEnvelopeFloorUlps = 4.0;
inline constexpr double kEnvelopeScoreUlps = 4.0;

struct EnvelopeResult {
  bool ok = true;
  // The largest kernel error / allowance over the classes (<= 1 passes), for the statistics.
  double ratio = 0;
  std::string message;  // when !ok: which class, both errors, the allowance and the ratio
};

// `kernel` and `baseline` are (B, H, Sq, D) outputs widened to float; `exact` the reference
// for the same problem (its magnitudes and expectations); `dtype` the output dtype.
EnvelopeResult CheckPrecisionEnvelope(absl::Span<const float> kernel,
                                      absl::Span<const float> baseline,
                                      const reference::ReferenceAttention& exact, DType dtype);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_PRECISION_ENVELOPE_H_
