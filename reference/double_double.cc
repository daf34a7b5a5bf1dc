// DoubleDouble's elementary functions. Error analysis notation: u = 2^-53, bounds relative
// unless stated, O(u^3) terms dropped; the basic operations' bounds are in double_double.h
// (add 3u^2, add a double 2u^2, multiply 7u^2, multiply by a double 3u^2, divide 2u^2).
//
// Everything rests on ExpM1Small, e^r - 1 for |r| <= ln(2)/2, which has no argument-reduction
// error of its own; exp and expm1 reduce x = k ln 2 + r, tanh and log go through expm1.
#include "reference/double_double.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>

namespace kvcheck::reference {
namespace {

using double_double_internal::kInvFactorial;
using double_double_internal::kInvFactorialFirst;
using double_double_internal::kInvFactorialTail;
using double_double_internal::kInvFactorialTailFirst;
using double_double_internal::kLn2Hi;
using double_double_internal::kLn2Lo;
using double_double_internal::kLn2Mid;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kInvLn2 = 0x1.71547652b82fep+0;  // RN(1/ln 2); only picks k, any k works
constexpr double kRoundToInteger = 0x1.8p52;      // (y + 1.5 2^52) - 1.5 2^52 = RN-even(y)

// exp(x) is 0 below this (e^-746 < 2^-1076, below half the smallest subnormal) and +inf above
// the next (e^709.79 > 2^1024); between these and the exact thresholds of the header comment
// the scaling in ScaleExp decides.
constexpr double kExpZeroBelow = -746;
constexpr double kExpInfAbove = 709.79;

// 2^e for -1022 <= e <= 1023, from its bit pattern.
constexpr double PowerOfTwo(int e) {
  return std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52);
}

// Nearest integer to x / ln 2 (ties either way), as a double. |x| < 2^51 ln 2.
double NearestMultipleOfLn2(double x) { return (x * kInvLn2 + kRoundToInteger) - kRoundToInteger; }

// r = x - k ln 2 for an integer-valued k with |k| <= 1100. k*kLn2Hi and k*kLn2Mid are exact
// (FMA); k*kLn2Lo (< 2^-99) is rounded, an error < 2^-152; ln 2 itself is off by < 2^-163 k.
// The three accurate subtractions each err by 3u^2 of a partial result that is within
// |k| 2^-54 < 2^-43 of r, |r| <= 0.35: about 3u^2 absolute error in r. That is what matters:
// e^(r + d) = e^r (1 + d + ...), so an absolute error d in r is a relative error d in e^x.
DoubleDouble ReduceByLn2(const DoubleDouble& x, double k) {
  return ((x - DoubleDouble::Product(k, kLn2Hi)) - DoubleDouble::Product(k, kLn2Mid)) - k * kLn2Lo;
}

// e^r - 1 for |r| <= 0.35 (ln(2)/2 plus the slack of ReduceByLn2), relative error ~13u^2.
//   1. s = r/4 (exact), |s| <= 0.0867;
//   2. Taylor: e^s - 1 = s + s^2 q(s), q(s) = sum_{n>=2} s^(n-2)/n!, Horner from n = 18. The
//      first omitted term, s^17/19! < 2^-116 q. Terms n >= 11 (<= s^9/11! < 2^-56 q) need only
//      double precision: their Horner steps run on doubles (on sh, with 1/n! rounded), their
//      relative error ~2u costing < 2^-107 of q. Steps n = 10..2 are double-double: each adds
//      3u^2 (the sum) + 7u^2 * 0.03 (the product s*q is < 0.03 of the sum), and earlier errors
//      are damped by the same 0.03 on the way down: q to ~3.3u^2. Then p = s + s (s q), where
//      s^2 q < 0.05 |p| carries q's error and two products' (14u^2) at that weight, plus 3u^2
//      for the sum: p to ~3.8u^2;
//   3. Doubling twice: e^(2s) - 1 = (e^s - 1)(e^s + 1) = 2p + p^2. The relative error of p
//      carries over (times (2 + 2p)/(2 + p) ~ 1) and each step adds 3u^2 (sum) + 7u^2 * 0.2
//      (the square is < 0.2 of the result): ~4.4u^2 per step.
//   Total ~13u^2.
// Tiny r (|r| < 2^-54, where s would lose the bits of a subnormal lo): e^r - 1 = r + r^2/2 with
// r^3/6 < 2^-109 |r| dropped; RN(rh^2/2) and dropping rl from r^2 err by < 2^-107 |r|. (The
// product rh^2/2 is below ulp(rh)/2, so even if a compiler contracted it into the TwoSum of the
// addition, that TwoSum would return (rh, RN(rh^2/2)) just the same.)
DoubleDouble ExpM1Small(const DoubleDouble& r) {
  const double rh = r.hi();
  if (std::fabs(rh) < 0x1p-54) return r + 0.5 * rh * rh;
  const DoubleDouble s = DoubleDouble::FromParts(0.25 * rh, 0.25 * r.lo());
  constexpr int kTail = sizeof(kInvFactorialTail) / sizeof(kInvFactorialTail[0]);
  constexpr int kHead = sizeof(kInvFactorial) / sizeof(kInvFactorial[0]);
  static_assert(kInvFactorialFirst + kHead == kInvFactorialTailFirst);
  double tail = kInvFactorialTail[kTail - 1];
  for (int i = kTail - 2; i >= 0; --i) tail = kInvFactorialTail[i] + s.hi() * tail;
  DoubleDouble q = tail;
  for (int i = kHead - 1; i >= 0; --i) q = kInvFactorial[i] + s * q;
  DoubleDouble p = s + s * (s * q);
  for (int step = 0; step < 2; ++step) {
    p = DoubleDouble::FromParts(2 * p.hi(), 2 * p.lo()) + p * p;  // 2p + p^2
  }
  return p;
}

// v 2^k for exp: v in [0.7, 1.42] (e^r), -1076 <= k <= 1024. 2^k may not be a double (k = 1024,
// k < -1022), so scale in two steps by 2^k1 2^k2, k1 = k/2, both in [-538, 512]: the first is
// exact, so each word is rounded once. For a normal result hi is then exact and lo is rounded
// only if it falls below 2^-1022 (absolute error <= 2^-1075). Above 2^-968 that cannot bring lo
// to ulp(hi)/2, so the pair stays normalised; between 2^-1022 and 2^-968 it is renormalised,
// with lo formed by std::fma(b, 2^k2, 0) = RN(b 2^k2), which no compiler contraction can fold
// into the TwoSum (a contracted TwoSum is not exact, and the pair would not be normalised).
// A subnormal result is rounded once, from the whole pair, to the grid of 2^-1074 (rounding hi
// and lo separately would round twice).
DoubleDouble ScaleExp(const DoubleDouble& v, int k) {
  const int k1 = k / 2;
  const int k2 = k - k1;
  const double a = v.hi() * PowerOfTwo(k1);  // exact
  const double b = v.lo() * PowerOfTwo(k1);  // exact (rounded only if |lo| < 2^-484: negligible)
  const double hi = a * PowerOfTwo(k2);
  if (hi >= 0x1p-968) {
    if (hi == kInf) return kInf;
    return DoubleDouble::FromParts(hi, b * PowerOfTwo(k2));
  }
  if (hi >= 0x1p-1022) return DoubleDouble::Sum(hi, std::fma(b, PowerOfTwo(k2), 0.0));
  // In units of the grid: A = a 2^(k2 + 1074) < 2^52 and B likewise (both exact). n = RN(A) by
  // the 2^52 trick (A + 2^52 lies in [2^52, 2^53), where the spacing is 1), rem = A - n exactly,
  // |rem| <= 1/2. Then RN(A + B) is n + 1 if rem + B > 1/2, n - 1 if rem + B < -1/2, on a tie
  // the even neighbour. The signs are exact: rem -+ 1/2 is exact whenever it is small
  // (Sterbenz), |B| <= 2u A is far smaller otherwise, and RN keeps the sign of a sum.
  const double unit = PowerOfTwo(k2 + 1074);  // k2 + 1074 in [536, 564]
  const double big_a = a * unit;
  const double big_b = b * unit;
  const double n = (big_a + 0x1p52) - 0x1p52;
  const double rem = big_a - n;
  const double above = (rem - 0.5) + big_b;
  const double below = (rem + 0.5) + big_b;
  const bool odd = (static_cast<int64_t>(n) & 1) != 0;
  double m = n;
  if (above > 0 || (above == 0 && odd)) {
    m = n + 1;
  } else if (below < 0 || (below == 0 && odd)) {
    m = n - 1;
  }
  return m * 0x1p-1074;  // exact: an integer below 2^53 times the grid
}

}  // namespace

// exp(x) = 2^k e^r with k = round(x / ln 2), r = x - k ln 2 (|r| <= 0.35):
// e^r = 1 + ExpM1Small(r). Error: 3u^2 (reduction, absolute in r) + 13u^2 |p|/(1 + p) with
// |p|/(1 + p) <= 0.42, + 2u^2 (adding 1) = ~10.5u^2; the scaling is exact for normal results.
DoubleDouble exp(const DoubleDouble& x) {
  const double xh = x.hi();
  if (std::isnan(xh)) return xh;
  if (xh < kExpZeroBelow) return 0.0;
  if (xh > kExpInfAbove) return kInf;
  const double k = NearestMultipleOfLn2(xh);
  const DoubleDouble v = 1.0 + ExpM1Small(ReduceByLn2(x, k));
  return ScaleExp(v, static_cast<int>(k));
}

// e^x - 1.
//   |x| <= ln(2)/2 (k = 0): ExpM1Small(x) directly, no reduction error: ~13u^2.
//   otherwise, |x| <= 40: e^x - 1 = 2^k (1 + p) - 1 = 2^k p + (2^k - 1), p = e^r - 1. 2^k p is
//     exact (|k| <= 58) and 2^k - 1 is an exact pair (TwoSum), so only the last addition rounds
//     (3u^2). p's relative error (~13u^2) reaches the result scaled by |2^k p| / |result|, at
//     most 1.41 for x > 0 (k = 1, p = -0.29) and 0.71 for x < 0 (k = -1, p = 0.41); the
//     reduction error d (~3u^2, relative in e^x) scaled by e^x / |e^x - 1|, at most 3.4
//     (x = 0.35) for x > 0 and 2.4 for x < 0. Together ~31u^2 for x > 0, ~19u^2 for x < 0.
//   |x| > 40: exp(x) - 1; for x > 40 the -1 only rounds once more (2u^2), for x < -40 e^x <
//     2^-57 and exp's error vanishes in the result -1 + e^x.
DoubleDouble expm1(const DoubleDouble& x) {
  const double xh = x.hi();
  if (std::isnan(xh)) return xh;
  if (!(std::fabs(xh) <= 40)) return exp(x) - 1.0;  // also +-inf: inf and -1
  const double k = NearestMultipleOfLn2(xh);
  if (k == 0) return ExpM1Small(x);
  const DoubleDouble p = ExpM1Small(ReduceByLn2(x, k));
  const double scale = PowerOfTwo(static_cast<int>(k));
  return DoubleDouble::FromParts(scale * p.hi(), scale * p.lo()) + DoubleDouble::Sum(scale, -1.0);
}

// tanh|x| = (1 - e^-2|x|) / (1 + e^-2|x|) = -m / (2 + m) with m = expm1(-2|x|) in (-1, 0).
// Near 0, m ~ -2|x| carries the value without cancellation and 2 + m ~ 2; for large |x|,
// m -> -1 and the quotient -> 1. Error: m's relative error e_m (~19u^2 for a negative
// argument, see expm1) enters the numerator as e_m and the denominator as e_m |m| / (2 + m)
// <= e_m (|m| < 1); 2 + m and the division add 2u^2 each: <= 2 e_m + 4u^2, ~42u^2.
// |x| > 40: 1 - tanh|x| = 2e^-2|x| / (1 + e^-2|x|) < 2e^-80 < 2^-114, so +-1 is within u^2/256.
DoubleDouble tanh(const DoubleDouble& x) {
  const double xh = x.hi();
  if (std::isnan(xh) || xh == 0) return x;
  if (std::fabs(xh) > 40) return std::copysign(1.0, xh);
  const DoubleDouble ax = abs(x);
  const DoubleDouble m = expm1(DoubleDouble::FromParts(-2 * ax.hi(), -2 * ax.lo()));  // exact
  const DoubleDouble t = -m / (m + 2.0);
  return xh < 0 ? -t : t;
}

// log x = e ln 2 + log m with x = 2^e m, m in [1/sqrt 2, sqrt 2) (exact scaling).
// log m by one Newton step on e^y = m from y0 = RN(log(mh)) (|y0| <= 0.35, within ~1.5u of
// log m, including the ignored ml): log m = y0 + log1p(t) with
//   t = m e^-y0 - 1 = ((m - 1) - (e^y0 - 1)) / e^y0,
// where m - 1 is exact (mh - 1 is, by Sterbenz) and e^y0 - 1 = ExpM1Small(y0) has relative error
// ~13u^2, i.e. absolute ~13u^2 |y0| ~ 13u^2 |log m|: no cancellation near m = 1, the result stays
// relatively accurate (log m to ~18u^2 with the subtraction, division and final sum). |t| <~ 2^-52,
// so log1p(t) = t - t^2/2 up to t^3/3 < 2^-155. Then e ln 2 (two exact products and a rounded third
// of < 2^-100) plus log m: for e != 0, |log x| >= |e| ln 2 - 0.35 >= |e ln 2| / 2, so the errors of
// the sum grow by at most 2: (3 + 2) u^2 * 2 + ~18u^2 (log m) + 3u^2 (the sum) ~ 31u^2.
DoubleDouble log(const DoubleDouble& x) {
  const double xh = x.hi();
  if (!(xh > 0) || xh == kInf) return std::log(xh);  // 0: -inf, < 0: NaN, NaN, inf
  int e;
  const double f = std::frexp(xh, &e);  // xh = f 2^e, f in [0.5, 1)
  if (f < 0x1.6a09e667f3bcdp-1) --e;    // f < 1/sqrt 2: m = 2f in [1, sqrt 2)
  const DoubleDouble m = DoubleDouble::Sum(std::ldexp(xh, -e), std::ldexp(x.lo(), -e));
  const double y0 = std::log(m.hi());
  const DoubleDouble em1 = ExpM1Small(y0);
  const DoubleDouble t = ((m - 1.0) - em1) / (em1 + 1.0);
  const DoubleDouble log_m = y0 + (t - 0.5 * t.hi() * t.hi());
  if (e == 0) return log_m;
  const double ed = e;
  return ((DoubleDouble::Product(ed, kLn2Hi) + DoubleDouble::Product(ed, kLn2Mid)) + ed * kLn2Lo) +
         log_m;
}

std::ostream& operator<<(std::ostream& os, const DoubleDouble& x) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g + %.17g", x.hi(), x.lo());
  return os << buffer;
}

}  // namespace kvcheck::reference
