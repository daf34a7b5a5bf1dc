// File: flash_exp-inl.h
// exp(x) for the online softmax's arguments, which are never positive: s_t - m for a score
// below the running max m, and m_old - m_new for a rescale. Highway code, included once per
// target after hwy/foreach_target.h.
//
// Why not Highway's Exp: it serves all of float's range (two scalings by 2^(n/2) so that
// results reach the subnormals, a conversion that guards against overflow), about 30
// instructions per vector; in the prefill kernel that was about a fifth of the time. Here
// x <= 0, so one scaling by 2^n with n in [-126, 0] suffices, and a result below FLT_MIN
// (x < ln(FLT_MIN) = -87.3365) is returned as 0: the error bound (reference/ERROR_BOUND.md,
// step 3) already lets a weight whose gap is below -80 be lost entirely. About 15
// instructions.
//
//   n = round(x log2 e),  r = x - n ln2 (ln2 in two parts: n * kLn2Hi is exact),
//   exp(r) = 1 + r + r^2 P(r) on |r| <= ln2 / 2, P of degree 4 fitted for relative error
//   (3e-9 before rounding, a twentieth of an ulp), then times 2^n built in the exponent bits.
//
// Contract, checked over every float in [-87.34, 0] with a stride, on every target, by
// flash_exp_test.cc: within 2 ulps of exp(x) (the bound's exp_ulps) for x >= kExpMinArgument;
// exactly 1 for x = 0 (the largest weight of a row is 1: the bound relies on l >= 1);
// 0 for x below kExpMinArgument, for -inf and for NaN (the kernel relies on Exp(NaN) = 0 when
// the running max is still -inf; NaN scores are caught before this is called). Positive x is
// outside the contract.

// Per-target include guard (Highway's convention for -inl.h files).
#if defined(KVCHECK_SRC_ATTENTION_FLASH_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVCHECK_SRC_ATTENTION_FLASH_EXP_INL_H_
#undef KVCHECK_SRC_ATTENTION_FLASH_EXP_INL_H_
#else
#define KVCHECK_SRC_ATTENTION_FLASH_EXP_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvcheck::flash_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The smallest argument whose exp is a normal float: exp(-87.33654) = 1.1755e-38 >= FLT_MIN.
inline constexpr float kExpMinArgument = -87.33654f;

template <class DF>
HWY_INLINE hn::Vec<DF> ExpOfNonPositive(DF df, hn::Vec<DF> x) {
  const hn::RebindToSigned<DF> di;
  // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with 16 significant bits: n * kLn2Hi is exact for |n| <= 126.
  const auto log2e = hn::Set(df, 1.44269504088896341f);
  const auto ln2_hi = hn::Set(df, 0.693145751953125f);
  const auto ln2_lo = hn::Set(df, 1.42860676533018704e-6f);
  // n = round(x log2 e), rounded by the addition of 1.5 * 2^23 (+ the bias 127): in
  // [2^23, 2^24) a float's spacing is 1, so t's low mantissa bits hold n + 127 (ties to
  // even, as the FPU rounds) without a conversion instruction.
  const auto magic = hn::Set(df, 12582912.0f + 127.0f);
  const auto t = hn::MulAdd(x, log2e, magic);
  const auto n = hn::Sub(t, magic);
  auto r = hn::NegMulAdd(n, ln2_hi, x);
  r = hn::NegMulAdd(n, ln2_lo, r);
  // P(r) = c2 + c3 r + c4 r^2 + c5 r^3 + c6 r^4 (fitted near-minimax, see the header).
  auto p = hn::Set(df, 1.3814943376928568e-3f);
  p = hn::MulAdd(p, r, hn::Set(df, 8.368675597012043e-3f));
  p = hn::MulAdd(p, r, hn::Set(df, 4.1668377816677094e-2f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.666652113199234e-1f));
  p = hn::MulAdd(p, r, hn::Set(df, 4.999999403953552e-1f));
  // exp(r) = (r + r^2 P(r)) + 1: the 1 last, so that exp(0) is exactly 1.
  const auto exp_r = hn::Add(hn::MulAdd(p, hn::Mul(r, r), r), hn::Set(df, 1.0f));
  // 2^n for n in [-126, 0]: t's low bits hold n + 127 in [1, 127]; shifted into the
  // exponent field, the rest of t (0x4B400000) leaves the 32 bits. Lanes with x below
  // kExpMinArgument get garbage here and are zeroed below.
  const auto bits = hn::ShiftLeft<23>(hn::BitCast(di, t));
  const auto result = hn::Mul(exp_r, hn::BitCast(df, bits));
  // x >= kExpMinArgument is false for NaN and -inf: those, and the underflows, give 0.
  return hn::IfThenElseZero(hn::Ge(x, hn::Set(df, kExpMinArgument)), result);
}

}  // namespace HWY_NAMESPACE
}  // namespace kvcheck::flash_internal
HWY_AFTER_NAMESPACE();

#endif  // KVCHECK_SRC_ATTENTION_FLASH_EXP_INL_H_
