// DoubleDouble (reference/double_double.h) against Real (cpp_bin_float_50, 168 bits) as the
// oracle: every operation's relative error on random operands over the whole exponent range,
// within the documented bound, with the worst error seen printed in units of 2^-106; special
// values; exact constructions; the constants of double_double.cc re-derived; a timing printout.
//
// The generator is a fixed-seed std::mt19937_64, so a failure reproduces; KVCHECK_CASE_SCALE
// (set by the sanitizer configs) scales the case counts.
#include "reference/double_double.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "reference/real.h"

namespace kvcheck::reference {
namespace {

using DD = DoubleDouble;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMax = std::numeric_limits<double>::max();

// Documented bounds (double_double.h), in units of 2^-106.
constexpr double kAddBound = 3;
constexpr double kAddDoubleBound = 2;
constexpr double kMulBound = 7;
constexpr double kMulDoubleBound = 3;
constexpr double kDivBound = 2;
constexpr double kSqrtBound = 5;
constexpr double kFunctionBound = 64;  // 2^-100

int Cases(int n) {
  double scale = 1;
  if (const char* text = std::getenv("KVCHECK_CASE_SCALE")) {
    const double value = std::strtod(text, nullptr);
    if (value > 0) scale = value;
  }
  return std::max(100, static_cast<int>(n * scale));
}

// Half the smallest subnormal, 2^-1075 (not a double).
const Real kHalfSubnormalUlp = ldexp(Real(1), -1075);

Real ToReal(const DD& x) { return Real(x.hi()) + Real(x.lo()); }

// |got - exact| / |exact| in units of 2^-106 (0 when both are 0).
double UnitsOfError(const DD& got, const Real& exact) {
  if (exact == 0) return got == 0 ? 0 : kInf;
  const Real relative = abs((ToReal(got) - exact) / exact);
  return ToDouble(relative * Real(0x1p106));
}

bool IsNormalised(const DD& x) { return x.hi() + x.lo() == x.hi(); }

// The worst error of one operation, with the operands that produced it.
class Worst {
 public:
  Worst(const char* name, double bound) : name_(name), bound_(bound) {}

  void Add(double units, const DD& x, const DD& y = DD()) {
    ++cases_;
    if (!(units <= worst_)) {
      worst_ = units;
      x_ = x;
      y_ = y;
    }
  }

  // Prints the line for the report and checks the bound.
  void Check() const {
    std::printf("  %-34s worst %7.3f units of 2^-106 (bound %g) over %d cases\n", name_, worst_,
                bound_, cases_);
    EXPECT_LE(worst_, bound_) << name_ << " at x = " << x_ << ", y = " << y_;
  }

 private:
  const char* name_;
  double bound_;
  double worst_ = 0;
  int cases_ = 0;
  DD x_, y_;
};

class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}

  double Uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Coin() { return Int(0, 1) == 1; }

  // A double with a random 53-bit significand, magnitude in [2^e, 2^(e+1)), random sign.
  double Double(int e) {
    const double m = 1 + Uniform(0, 1);
    return (Coin() ? -1 : 1) * std::ldexp(m, e);
  }
  // A normalised pair with a random 53-bit hi in [2^e, 2^(e+1)) and random lo below ulp(hi)/2;
  // one in eight has lo = 0 (a plain double), like many real operands.
  DD Pair(int e) {
    const double hi = Double(e);
    if (Int(0, 7) == 0) return hi;
    return DD::Sum(hi, hi * Uniform(-1, 1) * 0x1p-53);
  }
  DD Positive(int e) { return abs(Pair(e)); }
  // A pair with value uniform in [lo, hi] (and a random low word).
  DD InRange(double lo, double hi) {
    const double x = Uniform(lo, hi);
    return DD::Sum(x, x * Uniform(-1, 1) * 0x1p-53);
  }

 private:
  std::mt19937_64 rng_;
};

// e^x - 1 in Real without cancellation: the Taylor series for |x| < 1/16 (terms to 2^-200).
Real RealExpm1(const Real& x) {
  if (abs(x) >= Real(0.0625)) return exp(x) - 1;
  Real term = x, sum = x;
  for (int n = 2; n < 60; ++n) {
    term = term * x / n;
    sum += term;
    if (abs(term) < abs(sum) * Real(0x1p-200)) break;
  }
  return sum;
}

// log x in Real, relatively accurate near x = 1 too: log x = 2 atanh(z), z = (x-1)/(x+1).
Real RealLog(const Real& x) {
  if (abs(x - 1) >= Real(0.0625)) return log(x);
  const Real z = (x - 1) / (x + 1);
  const Real z2 = z * z;
  Real power = z, sum = z;
  for (int n = 3; n < 200; n += 2) {
    power *= z2;
    const Real term = power / n;
    sum += term;
    if (abs(term) < abs(sum) * Real(0x1p-200)) break;
  }
  return 2 * sum;
}

// tanh x = t / (t + 2) with t = e^(2x) - 1: no cancellation at any x.
Real RealTanh(const Real& x) {
  const Real t = RealExpm1(2 * x);
  return t / (t + 2);
}

// ---------------------------------------------------------------------------------------------
// Basic operations on random operands.

TEST(DoubleDoubleAccuracy, AdditionAndSubtraction) {
  Sampler sampler(1);
  Worst add("x + y", kAddBound), sub("x - y", kAddBound),
      cancel("x + y (deep cancellation)", kAddBound), add_d("x + d, d + x", kAddDoubleBound),
      sub_d("x - d, d - x", kAddDoubleBound);
  const int n = Cases(200000);
  for (int i = 0; i < n; ++i) {
    const int ex = sampler.Int(-900, 1000);
    // y overlaps x (|ey - ex| <= 110) in three cases out of four, else anywhere.
    const int ey = sampler.Int(0, 3) > 0 ? std::clamp(ex + sampler.Int(-110, 110), -900, 1000)
                                         : sampler.Int(-900, 1000);
    const DD x = sampler.Pair(ex);
    const DD y = sampler.Pair(ey);
    const Real rx = ToReal(x), ry = ToReal(y);
    add.Add(UnitsOfError(x + y, rx + ry), x, y);
    sub.Add(UnitsOfError(x - y, rx - ry), x, y);
    // y = -(x + small): the sum cancels up to 105 bits (deeper, Real's 168 bits could no longer
    // hold x + y's words exactly).
    const DD close = -(x + sampler.Pair(ex - sampler.Int(1, 105)));
    cancel.Add(UnitsOfError(x + close, rx + ToReal(close)), x, close);
    const double d = sampler.Double(ey);
    add_d.Add(UnitsOfError(x + d, rx + Real(d)), x, d);
    add_d.Add(UnitsOfError(d + x, rx + Real(d)), x, d);
    sub_d.Add(UnitsOfError(x - d, rx - Real(d)), x, d);
    sub_d.Add(UnitsOfError(d - x, Real(d) - rx), x, d);
    ASSERT_TRUE(IsNormalised(x + y) && IsNormalised(x - d)) << x << ", " << y;
  }
  add.Check();
  sub.Check();
  cancel.Check();
  add_d.Check();
  sub_d.Check();
}

TEST(DoubleDoubleAccuracy, Multiplication) {
  Sampler sampler(2);
  Worst mul("x * y", kMulBound), mul_d("x * d, d * x", kMulDoubleBound), square("x * x", kMulBound);
  const int n = Cases(200000);
  for (int i = 0; i < n; ++i) {
    // Operands over 2^-1000..2^1000, products within 2^-955..2^1001 (the full-precision range).
    const int ex = sampler.Int(-1000, 1000);
    const int ey = sampler.Int(std::max(-1000, -955 - ex), std::min(1000, 1000 - ex));
    const DD x = sampler.Pair(ex);
    const DD y = sampler.Pair(ey);
    const double d = sampler.Double(ey);
    const Real rx = ToReal(x);
    mul.Add(UnitsOfError(x * y, rx * ToReal(y)), x, y);
    mul_d.Add(UnitsOfError(x * d, rx * Real(d)), x, d);
    mul_d.Add(UnitsOfError(d * x, rx * Real(d)), x, d);
    const DD z = sampler.Pair(sampler.Int(-470, 500));
    square.Add(UnitsOfError(z * z, ToReal(z) * ToReal(z)), z);
    ASSERT_TRUE(IsNormalised(x * y) && IsNormalised(x * d)) << x << ", " << y;
  }
  mul.Check();
  mul_d.Check();
  square.Check();
}

TEST(DoubleDoubleAccuracy, Division) {
  Sampler sampler(3);
  Worst div("x / y", kDivBound), div_d("x / d", kDivBound), d_div("d / y", kDivBound),
      near_max("x / y near the overflow threshold", kDivBound);
  const int n = Cases(200000);
  for (int i = 0; i < n; ++i) {
    // Quotients within 2^-955..2^1000.
    const int ex = sampler.Int(-1000, 1000);
    const int ey = sampler.Int(std::max(-1000, ex - 999), std::min(1000, ex + 955));
    const DD x = sampler.Pair(ex);
    const DD y = sampler.Pair(ey);
    const double d = sampler.Double(ey);
    const double dx = sampler.Double(ex);
    const Real rx = ToReal(x), ry = ToReal(y);
    div.Add(UnitsOfError(x / y, rx / ry), x, y);
    div_d.Add(UnitsOfError(x / d, rx / Real(d)), x, d);
    d_div.Add(UnitsOfError(dx / y, Real(dx) / ry), dx, y);
    ASSERT_TRUE(IsNormalised(x / y) && IsNormalised(x / d)) << x << ", " << y;
    // Dividends near DBL_MAX, where q1 * yh may overflow although the quotient does not (the
    // retry at a quarter scale).
    if (i % 16 == 0) {
      const DD big = sampler.Pair(1023);
      const DD by = abs(sampler.Pair(sampler.Int(0, 3)));
      near_max.Add(UnitsOfError(big / by, ToReal(big) / ToReal(by)), big, by);
    }
  }
  div.Check();
  div_d.Check();
  d_div.Check();
  near_max.Check();
}

TEST(DoubleDoubleAccuracy, SquareRoot) {
  Sampler sampler(4);
  Worst root("sqrt(x)", kSqrtBound), tiny("sqrt(x), x subnormal", kSqrtBound);
  const int n = Cases(100000);
  for (int i = 0; i < n; ++i) {
    const DD x = sampler.Positive(sampler.Int(-1000, 1023));
    const DD r = sqrt(x);
    root.Add(UnitsOfError(r, sqrt(ToReal(x))), x);
    ASSERT_TRUE(IsNormalised(r)) << x;
    if (i % 16 == 0) {
      const double s = std::abs(sampler.Double(sampler.Int(-1074, -1023)));
      tiny.Add(UnitsOfError(sqrt(DD(s)), sqrt(Real(s))), s);
    }
  }
  root.Check();
  tiny.Check();
}

// ---------------------------------------------------------------------------------------------
// Elementary functions.

TEST(DoubleDoubleAccuracy, Exp) {
  Sampler sampler(5);
  Worst full("exp(x), e^x >= 2^-968", kFunctionBound), small("exp(x), |x| <= 1", kFunctionBound);
  // Below 2^-968, absolute errors in units of 2^-1075 (half the smallest subnormal): for
  // subnormal results (hi correctly rounded from the pair) and for [2^-1022, 2^-968).
  double worst_subnormal = 0, worst_low = 0;
  int subnormal_cases = 0, low_cases = 0;
  const int n = Cases(80000);
  for (int i = 0; i < n; ++i) {
    const DD x = sampler.InRange(-745.2, 709.78);
    const DD e = exp(x);
    const Real exact = exp(ToReal(x));
    ASSERT_TRUE(IsNormalised(e)) << x;
    if (exact >= Real(0x1p-968)) {
      full.Add(UnitsOfError(e, exact), x);
    } else {
      const Real error = abs(ToReal(e) - exact);
      const double in_half_ulps = ToDouble(ldexp(error, 1075));
      EXPECT_LE(error, kHalfSubnormalUlp + exact * Real(0x1p-100)) << x;
      if (e.hi() < 0x1p-1022) {
        EXPECT_EQ(e.lo(), 0) << x;
        worst_subnormal = std::max(worst_subnormal, in_half_ulps);
        ++subnormal_cases;
      } else {
        worst_low = std::max(worst_low, in_half_ulps);
        ++low_cases;
      }
    }
    if (i % 4 == 0) {
      const DD y = sampler.InRange(-1, 1);
      small.Add(UnitsOfError(exp(y), exp(ToReal(y))), y);
    }
  }
  full.Check();
  small.Check();
  std::printf("  exp(x), e^x < 2^-1022 (subnormal)  worst %.6f units of 2^-1075 over %d cases\n",
              worst_subnormal, subnormal_cases);
  std::printf("  exp(x), 2^-1022 <= e^x < 2^-968    worst %.6f units of 2^-1075 over %d cases\n",
              worst_low, low_cases);
}

TEST(DoubleDoubleAccuracy, Expm1) {
  Sampler sampler(6);
  Worst near_zero("expm1(x), 2^-60 <= |x| < 1", kFunctionBound),
      tiny("expm1(x), |x| < 2^-60", kFunctionBound), general("expm1(x), |x| <= 60", kFunctionBound),
      wide("expm1(x), -745..709", kFunctionBound);
  const int n = Cases(50000);
  for (int i = 0; i < n; ++i) {
    const DD a = sampler.Pair(sampler.Int(-60, -1));
    near_zero.Add(UnitsOfError(expm1(a), RealExpm1(ToReal(a))), a);
    const DD b = sampler.Pair(sampler.Int(-1000, -61));
    tiny.Add(UnitsOfError(expm1(b), RealExpm1(ToReal(b))), b);
    const DD c = sampler.InRange(-60, 60);
    general.Add(UnitsOfError(expm1(c), RealExpm1(ToReal(c))), c);
    if (i % 4 == 0) {
      const DD d = sampler.InRange(-745, 709.7);
      wide.Add(UnitsOfError(expm1(d), RealExpm1(ToReal(d))), d);
    }
  }
  near_zero.Check();
  tiny.Check();
  general.Check();
  wide.Check();
}

TEST(DoubleDoubleAccuracy, Tanh) {
  Sampler sampler(7);
  Worst general("tanh(x), |x| <= 30", kFunctionBound),
      near_zero("tanh(x), 2^-60 <= |x| < 1", kFunctionBound),
      tiny("tanh(x), |x| < 2^-60", kFunctionBound),
      saturating("tanh(x), 15 <= |x| <= 50", kFunctionBound);
  const int n = Cases(50000);
  for (int i = 0; i < n; ++i) {
    const DD a = sampler.InRange(-30, 30);
    general.Add(UnitsOfError(tanh(a), RealTanh(ToReal(a))), a);
    const DD b = sampler.Pair(sampler.Int(-60, -1));
    near_zero.Add(UnitsOfError(tanh(b), RealTanh(ToReal(b))), b);
    if (i % 4 == 0) {
      const DD c = sampler.Pair(sampler.Int(-1000, -61));
      tiny.Add(UnitsOfError(tanh(c), RealTanh(ToReal(c))), c);
      const DD d = sampler.InRange(15, 50) * (sampler.Coin() ? 1 : -1);
      saturating.Add(UnitsOfError(tanh(d), RealTanh(ToReal(d))), d);
    }
  }
  general.Check();
  near_zero.Check();
  tiny.Check();
  saturating.Check();
}

TEST(DoubleDoubleAccuracy, Log) {
  Sampler sampler(8);
  Worst general("log(x), 2^-1000 <= x < 2^1024", kFunctionBound),
      near_one("log(x), x = 1 + d, 2^-100 <= |d| < 1", kFunctionBound),
      subnormal("log(x), x subnormal", kFunctionBound);
  const int n = Cases(50000);
  for (int i = 0; i < n; ++i) {
    const DD a = sampler.Positive(sampler.Int(-1000, 1023));
    general.Add(UnitsOfError(log(a), RealLog(ToReal(a))), a);
    const DD b = 1.0 + sampler.Pair(sampler.Int(-100, -1));
    near_one.Add(UnitsOfError(log(b), RealLog(ToReal(b))), b);
    if (i % 8 == 0) {
      const double c = std::abs(sampler.Double(sampler.Int(-1074, -1023)));
      subnormal.Add(UnitsOfError(log(DD(c)), RealLog(Real(c))), c);
    }
  }
  general.Check();
  near_one.Check();
  subnormal.Check();
}

// The oracles themselves: the series agree with Boost's functions where those are accurate.
TEST(DoubleDoubleAccuracy, OraclesAgreeWithBoost) {
  for (const double x : {0.06, -0.06, 0.03, -0.001}) {
    EXPECT_LT(abs(RealExpm1(Real(x)) - (exp(Real(x)) - 1)), Real(0x1p-150)) << x;
    EXPECT_LT(abs(RealLog(Real(1 + x)) - log(Real(1 + x))), Real(0x1p-150)) << x;
    EXPECT_LT(abs(RealTanh(Real(x)) - tanh(Real(x))), Real(0x1p-150)) << x;
  }
}

// ---------------------------------------------------------------------------------------------
// Constants of double_double.cc, re-derived from Real.

namespace internal = double_double_internal;

// The greedy split: each word is the double nearest to what the previous ones leave.
TEST(DoubleDoubleConstants, Ln2SplitMatchesReal) {
  const Real ln2 = log(Real(2));
  const double hi = ToDouble(ln2);
  const double mid = ToDouble(ln2 - hi);
  const double lo = ToDouble(ln2 - hi - mid);
  EXPECT_EQ(hi, internal::kLn2Hi);
  EXPECT_EQ(mid, internal::kLn2Mid);
  EXPECT_EQ(lo, internal::kLn2Lo);
  EXPECT_LT(abs(ln2 - Real(hi) - Real(mid) - Real(lo)), Real(0x1p-163));
}

TEST(DoubleDoubleConstants, InverseFactorialsMatchReal) {
  Real factorial = 1;
  for (int n = 1; n <= 18; ++n) {
    factorial *= n;
    const Real inverse = 1 / factorial;
    const double hi = ToDouble(inverse);
    if (n < internal::kInvFactorialFirst) continue;
    if (n < internal::kInvFactorialTailFirst) {
      const DD c = internal::kInvFactorial[n - internal::kInvFactorialFirst];
      EXPECT_EQ(c.hi(), hi) << n;
      EXPECT_EQ(c.lo(), ToDouble(inverse - hi)) << n;
    } else {
      EXPECT_EQ(internal::kInvFactorialTail[n - internal::kInvFactorialTailFirst], hi) << n;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Exact operations, special values.

TEST(DoubleDoubleExact, ConstructionIsExact) {
  for (const int64_t n :
       {int64_t{0}, int64_t{1}, int64_t{-1}, (int64_t{1} << 53) + 1, -(int64_t{1} << 53) - 1,
        std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
        int64_t{0x7fffffffffffffff} - 12345}) {
    const DD x = n;
    EXPECT_EQ(ToReal(x), Real(n)) << n;
    EXPECT_TRUE(IsNormalised(x)) << n;
    EXPECT_TRUE(x == n) << n;
  }
  const uint64_t big = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(ToReal(DD(big)), Real(big));
  EXPECT_EQ(ToReal(DD(0.1f)), Real(0.1f));
  EXPECT_EQ(ToReal(DD(7)), Real(7));
  const DD sum = DD::Sum(1, 0x1p-80);
  EXPECT_EQ(sum.hi(), 1);
  EXPECT_EQ(sum.lo(), 0x1p-80);
  const DD product = DD::Product(1 + 0x1p-40, 1 + 0x1p-40);  // 1 + 2^-39 + 2^-80
  EXPECT_EQ(ToReal(product), Real(1 + 0x1p-39) + Real(0x1p-80));
  EXPECT_EQ(ToDouble(DD::Sum(1, 0x1p-80)), 1);
  // int64 beyond 2^53 in arithmetic and comparisons: converted exactly, never through double.
  const int64_t odd = (int64_t{1} << 60) + 1;
  EXPECT_EQ(ToReal(DD(0) + odd), Real(odd));
  EXPECT_EQ(ToReal(odd - DD(1)), Real(odd - 1));
  EXPECT_TRUE(DD(0x1p60) < odd);
  EXPECT_TRUE(DD(0x1p60) != odd);
}

TEST(DoubleDoubleExact, SumsThatDoubleLoses) {
  // (1e300 + 1e-300) - 1e300 == 1e-300 exactly.
  const DD a = (DD(1e300) + 1e-300) - 1e300;
  EXPECT_EQ(a.hi(), 1e-300);
  EXPECT_EQ(a.lo(), 0);
  // Catastrophic cancellation: (1 + 2^-30)^2 - 1 - 2^-29 = 2^-60. In double the square rounds to
  // 1 + 2^-29 and the result is 0; the pair keeps 2^-60 exactly.
  const double e = 1 + 0x1p-30;
  volatile double square = e * e;  // volatile: keep the double computation as written
  EXPECT_EQ(square - 1 - 0x1p-29, 0);
  const DD x = DD(e) * e - 1 - 0x1p-29;
  EXPECT_EQ(x.hi(), 0x1p-60);
  EXPECT_EQ(x.lo(), 0);
  // Sum of 1e20, 1, -1e20: 0 in double, 1 here.
  DD s = 0;
  for (const double v : {1e20, 1.0, -1e20}) s += v;
  EXPECT_EQ(s, 1);
}

TEST(DoubleDoubleSpecial, NaNPropagates) {
  const DD nan = std::numeric_limits<DD>::quiet_NaN();
  const DD one = 1;
  for (const DD& r :
       {nan + one, one + nan, nan - one,  nan * one, one * nan, nan / one,    one / nan,
        nan + 1.0, 1.0 - nan, nan * 2.0,  2.0 / nan, nan / 2.0, -nan,         abs(nan),
        sqrt(nan), exp(nan),  expm1(nan), tanh(nan), log(nan),  ldexp(nan, 3)}) {
    EXPECT_TRUE(IsNaN(r)) << r;
    EXPECT_FALSE(IsFinite(r));
    EXPECT_FALSE(IsInf(r));
  }
  EXPECT_FALSE(nan == nan);
  EXPECT_TRUE(nan != nan);
  EXPECT_FALSE(nan < one || nan > one || nan <= one || nan >= one || nan == 1.0 || nan < 1);
}

// Every infinite result is the clean pair (+-inf, 0).
::testing::AssertionResult IsCleanInf(const DD& x, int sign) {
  if (x.hi() == sign * kInf && x.lo() == 0 && IsInf(x)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << x << " is not (" << sign * kInf << ", 0)";
}

TEST(DoubleDoubleSpecial, InfinityFollowsIeee) {
  const DD inf = std::numeric_limits<DD>::infinity();
  const DD one = 1, zero = 0;
  EXPECT_TRUE(IsCleanInf(inf + one, 1));
  EXPECT_TRUE(IsCleanInf(one - inf, -1));
  EXPECT_TRUE(IsCleanInf(inf + inf, 1));
  EXPECT_TRUE(IsCleanInf(inf * 2.0, 1));
  EXPECT_TRUE(IsCleanInf(inf * -one, -1));
  EXPECT_TRUE(IsCleanInf(inf / 2.0, 1));
  EXPECT_TRUE(IsCleanInf(-inf / one, -1));
  EXPECT_TRUE(IsCleanInf(inf + 1.0, 1));
  EXPECT_TRUE(IsCleanInf(sqrt(inf), 1));
  EXPECT_TRUE(IsCleanInf(-inf, -1));
  EXPECT_TRUE(IsCleanInf(abs(-inf), 1));
  EXPECT_TRUE(IsCleanInf(ldexp(inf, -5), 1));
  EXPECT_TRUE(IsNaN(inf - inf));
  EXPECT_TRUE(IsNaN(inf + (-inf)));
  EXPECT_TRUE(IsNaN(zero * inf));
  EXPECT_TRUE(IsNaN(inf * 0.0));
  EXPECT_TRUE(IsNaN(inf / inf));
  EXPECT_TRUE(IsNaN(zero / zero));
  EXPECT_TRUE(IsNaN(zero / 0.0));
  EXPECT_TRUE(IsNaN(sqrt(DD(-1))));
  // x / 0 follows double on the leading word; finite / inf is 0.
  EXPECT_TRUE(IsCleanInf(one / zero, 1));
  EXPECT_TRUE(IsCleanInf(-one / zero, -1));
  EXPECT_TRUE(IsCleanInf(one / -0.0, -1));
  EXPECT_TRUE(IsCleanInf(1.0 / zero, 1));
  EXPECT_EQ(one / inf, 0);
  EXPECT_EQ(5.0 / inf, 0);
  EXPECT_EQ(DD(1e300) / -inf, 0);
  EXPECT_TRUE(inf > kMax && -inf < -kMax && inf == kInf);
}

TEST(DoubleDoubleSpecial, OverflowGivesCleanInfinity) {
  const DD max = std::numeric_limits<DD>::max();
  EXPECT_TRUE(IsNormalised(max));
  EXPECT_TRUE(IsFinite(max));
  EXPECT_TRUE(IsCleanInf(max + max, 1));
  EXPECT_TRUE(IsCleanInf(-max - max, -1));
  EXPECT_TRUE(IsCleanInf(max * 2.0, 1));
  EXPECT_TRUE(IsCleanInf(max * max, 1));
  EXPECT_TRUE(IsCleanInf(max * -max, -1));
  EXPECT_TRUE(IsCleanInf(max / 0.5, 1));
  EXPECT_TRUE(IsCleanInf(max / DD(0.75), 1));
  EXPECT_TRUE(IsCleanInf(DD(1e300) * 1e10, 1));
  EXPECT_TRUE(IsCleanInf(DD(1e300) / 1e-10, 1));
  EXPECT_TRUE(IsCleanInf(DD(1) / 1e-310, 1));
  EXPECT_TRUE(IsCleanInf(DD(kMax) + kMax, 1));
  EXPECT_TRUE(IsCleanInf(ldexp(DD(1), 1024), 1));
  // The pair just below overflow survives a neutral operation.
  EXPECT_EQ(max * 1.0, max);
  EXPECT_EQ(max / 1.0, max);
  EXPECT_EQ(max + 0.0, max);
  // DBL_MAX / 3 needs the quarter-scale retry when RN(q1 * 3) rounds above DBL_MAX.
  const DD third = DD(kMax) / 3.0;
  EXPECT_TRUE(IsFinite(third));
  EXPECT_LE(UnitsOfError(third, Real(kMax) / 3), kDivBound);
}

TEST(DoubleDoubleSpecial, ExpThresholds) {
  EXPECT_EQ(exp(-std::numeric_limits<DD>::infinity()), 0);
  EXPECT_TRUE(IsCleanInf(exp(std::numeric_limits<DD>::infinity()), 1));
  EXPECT_EQ(exp(DD(0)), 1);
  // Overflow at ln(2^1024 - 2^970) = 709.782712893383996...: the double just below is finite
  // (and accurate), the one above is inf.
  const double below = 0x1.62e42fefa39efp+9;  // 709.78271289338397
  const double above = std::nextafter(below, kInf);
  EXPECT_TRUE(IsFinite(exp(DD(below))));
  EXPECT_LE(UnitsOfError(exp(DD(below)), exp(Real(below))), kFunctionBound);
  EXPECT_TRUE(IsCleanInf(exp(DD(above)), 1));
  EXPECT_TRUE(IsCleanInf(exp(DD(710)), 1));
  EXPECT_TRUE(IsCleanInf(exp(DD(1e300)), 1));
  // Underflow at -1075 ln 2 = -745.13321910194110842: e^x rounds to 0 below it, to 2^-1074
  // (the smallest subnormal) just above it.
  EXPECT_EQ(exp(DD(-745.14)), 0);
  EXPECT_EQ(exp(DD(-745.2)), 0);
  EXPECT_EQ(exp(DD(-1e300)), 0);
  EXPECT_EQ(exp(DD(-745.13)), 0x1p-1074);
  EXPECT_EQ(exp(DD(-745.1)), 0x1p-1074);
  EXPECT_EQ(exp(DD(-743.75)), 0x1p-1073);  // e^-743.75 = 2^-1074 * 1.9939
  // Around the threshold the rounding comes from the pair as a whole: hi == RN(e^x).
  Sampler sampler(9);
  for (int i = 0; i < Cases(2000); ++i) {
    const DD x = sampler.InRange(-745.2, -708);
    const DD e = exp(x);
    const Real exact = exp(ToReal(x));
    EXPECT_LE(abs(ToReal(e) - exact), kHalfSubnormalUlp + exact * Real(0x1p-100)) << x;
  }
  // expm1 and tanh at the ends of their ranges.
  EXPECT_EQ(expm1(-std::numeric_limits<DD>::infinity()), -1);
  EXPECT_TRUE(IsCleanInf(expm1(std::numeric_limits<DD>::infinity()), 1));
  EXPECT_TRUE(IsCleanInf(expm1(DD(710)), 1));
  EXPECT_EQ(expm1(DD(-800)), -1);
  EXPECT_EQ(tanh(std::numeric_limits<DD>::infinity()), 1);
  EXPECT_EQ(tanh(-std::numeric_limits<DD>::infinity()), -1);
  EXPECT_EQ(tanh(DD(41)), 1);
  EXPECT_EQ(tanh(DD(-1e300)), -1);
  EXPECT_EQ(tanh(DD(0)), 0);
  EXPECT_TRUE(std::signbit(tanh(DD(-0.0)).hi()));
  EXPECT_EQ(tanh(DD(0x1p-1074)), 0x1p-1074);
  EXPECT_EQ(expm1(DD(0x1p-1074)), 0x1p-1074);
  // log at its ends.
  EXPECT_TRUE(IsCleanInf(log(DD(0)), -1));
  EXPECT_TRUE(IsCleanInf(log(std::numeric_limits<DD>::infinity()), 1));
  EXPECT_TRUE(IsNaN(log(DD(-1))));
  EXPECT_EQ(log(DD(1)), 0);
}

TEST(DoubleDoubleSpecial, Comparisons) {
  const DD a = DD::Sum(1, 0x1p-60), b = DD::Sum(1, 0x1p-59), c = DD::Sum(1, -0x1p-60);
  EXPECT_TRUE(c < 1.0 && 1.0 < a && a < b && c < a);
  EXPECT_TRUE(a > 1 && 1 < a && a >= a && a <= a && !(a < a));
  EXPECT_TRUE(a != 1.0 && DD(1) == 1.0 && DD(1) == 1 && 1.0 == DD(1) && 1 == DD(1));
  EXPECT_TRUE(DD(2) > a && 2.0f > a && -a < 0 && 0 > -a && -a <= -1);
  EXPECT_TRUE(DD(-0.0) == DD(0.0) && DD(-0.0) == 0);
  EXPECT_EQ(std::max(a, b), b);
  EXPECT_EQ(std::min(a, c), c);
}

TEST(DoubleDoubleSpecial, CompoundAssignmentAndMixedTypes) {
  DD x = 1;
  x += 0x1p-70;
  x += DD(2);
  x -= 1;
  x *= 4;
  x *= 0.5;
  x /= DD(2);
  x /= 2.0;
  x -= 1.0f;
  // ((1 + 2^-70 + 2 - 1) * 4 * 0.5 / 2 / 2) - 1 = 2^-71
  EXPECT_EQ(x, 0x1p-71);
  EXPECT_EQ(ToDouble(x), 0x1p-71);
  EXPECT_EQ((2 * DD(3)) / 4, 1.5);
  EXPECT_EQ(1 - DD(3), -2);
  EXPECT_EQ(6 / DD(3), 2);
  EXPECT_EQ(DD(6) / 3, 2);
  EXPECT_EQ(ldexp(DD::Sum(1, 0x1p-60), 10), DD::Sum(1024, 0x1p-50));
  EXPECT_EQ(abs(DD::Sum(-1, 0x1p-60)), DD::Sum(1, -0x1p-60));
}

TEST(DoubleDoubleSpecial, NumericLimits) {
  using Limits = std::numeric_limits<DD>;
  static_assert(Limits::is_specialized && Limits::has_infinity && Limits::has_quiet_NaN);
  static_assert(Limits::digits == 106 && Limits::radix == 2);
  EXPECT_EQ(Limits::epsilon(), 0x1p-105);
  EXPECT_TRUE(IsInf(Limits::infinity()) && Limits::infinity() > 0);
  EXPECT_TRUE(IsNaN(Limits::quiet_NaN()));
  EXPECT_EQ(Limits::min(), 0x1p-968);
  EXPECT_EQ(Limits::lowest(), -Limits::max());
  EXPECT_EQ(Limits::denorm_min(), 0x1p-1074);
  EXPECT_EQ(ToDouble(Limits::max()), kMax);
}

// Code templated over the number type, as the reference will be: the same unqualified calls
// compile for Real and for DoubleDouble (argument-dependent lookup) and agree.
template <typename T>
T SoftcappedWeight(const T& score, const T& cap, const T& max_score) {
  T s = cap * tanh(score / cap);
  if (IsNaN(s) || IsInf(s) || !IsFinite(s)) return std::numeric_limits<T>::quiet_NaN();
  T w = exp(s - max_score) + log(T(1));
  w += 0;
  return abs(w) / sqrt(T(4)) * 2;
}

TEST(DoubleDoubleSpecial, GenericCodeMatchesReal) {
  const DD dd = SoftcappedWeight<DD>(DD(3.5), DD(30), DD(4));
  const Real real = SoftcappedWeight<Real>(Real(3.5), Real(30), Real(4));
  EXPECT_LE(UnitsOfError(dd, real), kFunctionBound);
  EXPECT_EQ(ToDouble(dd), ToDouble(real));
  std::ostringstream text;
  text << DD::Sum(1, 0x1p-60);
  EXPECT_EQ(text.str(), "1 + 8.6736173798840355e-19");
}

// ---------------------------------------------------------------------------------------------
// Timing (printed, never asserted).

// The best of `repeats` timings of f(), which makes `calls` calls.
template <typename F>
double NanosecondsPerCall(int calls, int repeats, F&& f) {
  double best = kInf;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const auto stop = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(stop - start).count() / calls);
  }
  return best;
}

TEST(DoubleDoubleTiming, PrintsNanosecondsPerOperation) {
  const int n = Cases(100000);
  const int n_real_exp = Cases(20000);  // ~10 us each
  Sampler sampler(10);
  std::vector<DD> xs(n), as(n), bs(n), cs(n), out(n);
  std::vector<Real> rxs(n), ras(n), rbs(n), rcs(n), rout(n);
  for (int i = 0; i < n; ++i) {
    xs[i] = sampler.InRange(-20, 20);
    as[i] = sampler.InRange(-1, 1);
    bs[i] = sampler.InRange(-1, 1);
    cs[i] = sampler.InRange(-1, 1);
    rxs[i] = ToReal(xs[i]);
    ras[i] = ToReal(as[i]);
    rbs[i] = ToReal(bs[i]);
    rcs[i] = ToReal(cs[i]);
  }
  DD dd_sum = 0;
  Real real_sum = 0;
  const double dd_exp = NanosecondsPerCall(n, 3, [&] {
    for (int i = 0; i < n; ++i) out[i] = exp(xs[i]);
  });
  const double real_exp = NanosecondsPerCall(n_real_exp, 1, [&] {
    for (int i = 0; i < n_real_exp; ++i) rout[i] = exp(rxs[i]);
  });
  // A dot product: each addition waits for the previous one (latency-bound).
  const double dd_chain = NanosecondsPerCall(n, 3, [&] {
    dd_sum = 0;
    for (int i = 0; i < n; ++i) dd_sum += as[i] * bs[i];
  });
  const double real_chain = NanosecondsPerCall(n, 1, [&] {
    real_sum = 0;
    for (int i = 0; i < n; ++i) real_sum += ras[i] * rbs[i];
  });
  // Independent multiply-adds (throughput).
  const double dd_fma = NanosecondsPerCall(n, 3, [&] {
    for (int i = 0; i < n; ++i) out[i] = as[i] * bs[i] + cs[i];
  });
  const double real_fma = NanosecondsPerCall(n, 1, [&] {
    for (int i = 0; i < n; ++i) rout[i] = ras[i] * rbs[i] + rcs[i];
  });
  // The results agree (which also keeps the loops from being optimised away).
  EXPECT_LT(abs(ToReal(dd_sum) - real_sum), Real(0x1p-90));
  EXPECT_LT(abs(ToReal(out[n - 1]) - rout[n - 1]), Real(0x1p-100));
  const double dd_tanh = NanosecondsPerCall(n, 3, [&] {
    for (int i = 0; i < n; ++i) out[i] = tanh(xs[i]);
  });
  const double dd_div = NanosecondsPerCall(n, 3, [&] {
    for (int i = 0; i < n; ++i) out[i] = as[i] / bs[i];
  });
  const double dd_sqrt = NanosecondsPerCall(n, 3, [&] {
    for (int i = 0; i < n; ++i) out[i] = sqrt(abs(as[i]));
  });
  const double dd_log = NanosecondsPerCall(n, 3, [&] {
    for (int i = 0; i < n; ++i) out[i] = log(abs(as[i]));
  });
  EXPECT_FALSE(IsNaN(out[n - 1]));
  std::printf("  ns per operation          DoubleDouble  cpp_bin_float_50  speed-up\n");
  std::printf("  exp(x), |x| <= 20         %12.1f  %16.1f  %7.1fx\n", dd_exp, real_exp,
              real_exp / dd_exp);
  std::printf("  s += a * b (dependent)    %12.1f  %16.1f  %7.1fx\n", dd_chain, real_chain,
              real_chain / dd_chain);
  std::printf("  a * b + c (independent)   %12.1f  %16.1f  %7.1fx\n", dd_fma, real_fma,
              real_fma / dd_fma);
  std::printf("  tanh(x)                   %12.1f\n", dd_tanh);
  std::printf("  a / b                     %12.1f\n", dd_div);
  std::printf("  sqrt(a)                   %12.1f\n", dd_sqrt);
  std::printf("  log(a)                    %12.1f\n", dd_log);
}

}  // namespace
}  // namespace kvcheck::reference
