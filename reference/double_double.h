// File: double_double.h
// DoubleDouble: a double-double number, the unevaluated sum hi + lo of two doubles with
// hi == RN(hi + lo) (so |lo| <= ulp(hi)/2): a 106-bit significand with double's exponent range.
// It is the fast "exact-enough" alternative to Real (real.h) for the reference: each operation
// costs a few to a few hundred nanoseconds instead of microseconds, and has its own error bound.
//
// Error bounds. u = 2^-53 (double's unit roundoff); bounds are relative, in units of
// u^2 = 2^-106, for operands and results in the full-precision range (below). Bounds marked
// [JMP] are proved in Joldes, Muller, Popescu, "Tight and rigorous error bounds for basic
// building blocks of double-word arithmetic", ACM TOMS 44(2), 2017; the others are derived in the
// comments next to the code (first-order analyses, O(u^3) terms dropped, so read them as
// "+ a few u^3") and checked against Real by double_double_test.cc, which prints the worst error
// it observes for each (all observed worsts are well inside, see the test's output).
//   x + y, x - y (both DoubleDouble)            3   [JMP Alg. 6: 3u^2 + 13u^3]
//   x + d, d + x, x - d, d - x (d a double)      2   [JMP Alg. 4: 2u^2 + 5u^3]
//   x * y                                        7   [JMP Alg. 10, or Alg. 11 (6) if contracted]
//   x * d, d * x                                 3   [JMP Alg. 8, or Alg. 9 (2) if contracted]
//   x / y, x / d, d / y                          2   (long division, 3 quotient digits: u^2)
//   sqrt(x)                                      5   (Newton step, exact residual: 4.125u^2)
//   exp, expm1, tanh, log                       64   (= 2^-100; the analyses give 11 to 42)
// The products use one FMA each (the exact xh*yh); JMP's Algorithms 12 and 9 would bound them by
// 5 and 2 with two more FMAs, which cost a libm call each unless FMA instructions are enabled
// (about 2.5x the time of a multiplication).
// Conversions from double, float and integers (any width) are exact; ToDouble(x) returns the
// double nearest to x (hi + lo rounded, which is hi).
//
// Range. Doubles' exponent range: the largest finite value is just below 2^1024. The relative
// bounds need |result| >= 2^-968 (= numeric_limits<DoubleDouble>::min()), where lo still has all
// of its 53 bits above the subnormal threshold 2^-1074 (tiny operands are fine: division and
// sqrt scale them); below that the error is absolute, a few units of 2^-1074. Results whose
// nearest double overflows (|value| >= 2^1024 - 2^970) are +-inf; within the operation's error
// bound of that threshold either outcome may occur.
//
// Special values follow IEEE 754 on the leading parts: a NaN operand gives NaN; inf - inf,
// 0 * inf, 0 / 0, inf / inf and sqrt(negative) are NaN; x / 0 is +-inf or NaN as hi / 0 is in
// double; finite / inf is 0. An infinite result is always the clean pair (+-inf, 0) (the
// error-free transforms would leave a NaN low part; every operation checks for that and falls
// back to the double operation on the leading parts). Signed zeros are not tracked exactly: a
// zero result may be +0 where IEEE would give -0.
//
// Evaluation. Only std::fma forms the exact error of a product (no Dekker splitting). Plain
// products are used only for terms whose rounding the bounds already include, so if the
// compiler contracts one into the addition that consumes it (-ffp-contract with FMA
// instructions), that addition only loses a rounding: the multiplications then become JMP's
// FMA variants (Algorithms 11 and 9), whose bounds are smaller. Where a plain product enters a
// TwoSum directly it is below half an ulp of the other operand (a contracted TwoSum returns the
// same pair) or negligible (< 2^-150 of the result); where a product that may have been rounded
// into the subnormals is renormalised (ScaleDown, exp's scaling) it is formed as std::fma(a, b,
// 0), which cannot be contracted. (The test also passes built with -mfma -ffp-contract=fast.)
// Everything is inline except the elementary functions (double_double.cc). No allocation.
//
// Generic code written for Real works unchanged: the constructors from arithmetic types are
// implicit (as Real's are), the functions below are hidden friends found by argument-dependent
// lookup (abs, sqrt, exp, expm1, tanh, log, ldexp, IsNaN, IsInf, IsFinite, ToDouble, the same
// unqualified names that real.h and Boost provide for Real), and std::numeric_limits is
// specialised at the end of this file. Being hidden friends, they never capture calls on plain
// doubles (exp(1.0) still means ::exp).
#ifndef KVCHECK_REFERENCE_DOUBLE_DOUBLE_H_
#define KVCHECK_REFERENCE_DOUBLE_DOUBLE_H_

#include <cmath>
#include <compare>
#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <limits>

namespace kvcheck::reference {

class DoubleDouble {
 public:
  // Zero.
  constexpr DoubleDouble() = default;

  // Exact conversions. Implicit, like Real's, so that `T x = 0;` and `x * 2` work in code
  // templated over the number type.
  constexpr DoubleDouble(double x) : hi_(x) {}  // NOLINT(google-explicit-constructor)
  constexpr DoubleDouble(float x) : hi_(x) {}   // NOLINT(google-explicit-constructor)
  // Integers of up to 53 bits are exact doubles; wider ones are split into 32-bit halves,
  // n = high * 2^32 + low, each an exact double, whose sum is formed exactly by TwoSum (64 bits
  // fit in 106). Both halves are exact in the integer type (an arithmetic shift and a mask), so
  // this also works for INT64_MIN and UINT64_MAX.
  template <std::integral T>
  constexpr DoubleDouble(T n) {  // NOLINT(google-explicit-constructor)
    if constexpr (sizeof(T) < 8) {
      hi_ = static_cast<double>(n);
    } else {
      const double high = static_cast<double>(n >> 32) * 0x1p32;
      const double low = static_cast<double>(static_cast<uint64_t>(n) & 0xffffffffu);
      *this = TwoSum(high, low);
    }
  }

  // The pair (hi, lo) as given.
  // REQUIRES: hi == RN(hi + lo) (e.g. the output of TwoSum, or hi() and lo() of a value);
  // infinite or NaN hi with lo == 0. Not checked: the other operations assume it.
  static constexpr DoubleDouble FromParts(double hi, double lo) {
    DoubleDouble x;
    x.hi_ = hi;
    x.lo_ = lo;
    return x;
  }

  // a + b exactly (rounded to nearest only if it overflows, then (+-inf, 0)).
  static DoubleDouble Sum(double a, double b) {
    const DoubleDouble s = TwoSum(a, b);
    return std::isfinite(s.lo_) ? s : DoubleDouble(a + b);
  }

  // a * b exactly when |a * b| >= 2^-969 (the error term then lies above the subnormals);
  // (+-inf, 0) if it overflows, IEEE results for inf and NaN operands.
  static DoubleDouble Product(double a, double b) {
    const DoubleDouble p = TwoProd(a, b);
    return std::isfinite(p.lo_) ? p : DoubleDouble(a * b);
  }

  constexpr double hi() const { return hi_; }
  constexpr double lo() const { return lo_; }

  // --- Arithmetic (bounds in the file comment). ---

  friend constexpr DoubleDouble operator-(const DoubleDouble& x) {
    return FromParts(-x.hi_, -x.lo_);
  }
  friend constexpr DoubleDouble operator+(const DoubleDouble& x) { return x; }

  // JMP Algorithm 6. (sh, sl) = hi + hi and (th, tl) = lo + lo exactly; then fold in order of
  // magnitude, renormalising twice so that the result is a normalised pair.
  friend DoubleDouble operator+(const DoubleDouble& x, const DoubleDouble& y) {
    const DoubleDouble s = TwoSum(x.hi_, y.hi_);
    const DoubleDouble t = TwoSum(x.lo_, y.lo_);
    const DoubleDouble v = FastTwoSum(s.hi_, s.lo_ + t.hi_);  // |sl + th| <~ |sh| (JMP)
    const DoubleDouble z = FastTwoSum(v.hi_, t.lo_ + v.lo_);
    return Checked(z, x.hi_ + y.hi_);
  }

  // JMP Algorithm 4: (sh, sl) = xh + d exactly; the rounding of xl + sl is the only error.
  friend DoubleDouble operator+(const DoubleDouble& x, double d) {
    return Checked(AddUnchecked(x, d), x.hi_ + d);
  }
  friend DoubleDouble operator+(double d, const DoubleDouble& x) { return x + d; }

  friend DoubleDouble operator-(const DoubleDouble& x, const DoubleDouble& y) { return x + (-y); }
  friend DoubleDouble operator-(const DoubleDouble& x, double d) { return x + (-d); }
  friend DoubleDouble operator-(double d, const DoubleDouble& x) { return (-x) + d; }

  // JMP Algorithm 10: x*y = xh*yh + (xh*yl + xl*yh) + xl*yl. (ch, cl1) = xh*yh exactly (the
  // only FMA); the cross terms (each <= u|xy|) are added with plain operations, one rounding
  // each of about u^2 |xy|, and xl*yl (<= u^2 |xy|) is dropped. Should the compiler contract
  // xh*yl + xl*yh into an FMA, this becomes JMP Algorithm 11 (bound 6u^2): no product feeds an
  // error-free transform directly, so contraction only removes roundings.
  friend DoubleDouble operator*(const DoubleDouble& x, const DoubleDouble& y) {
    const DoubleDouble c = TwoProd(x.hi_, y.hi_);
    const double cross = x.hi_ * y.lo_ + x.lo_ * y.hi_;
    const DoubleDouble z = FastTwoSum(c.hi_, c.lo_ + cross);
    return Checked(z, x.hi_ * y.hi_);
  }

  // JMP Algorithm 8: (ch, cl1) = xh*d exactly, cl3 = cl1 + xl*d rounded twice (once if the
  // compiler contracts it, which is JMP Algorithm 9, bound 2u^2).
  friend DoubleDouble operator*(const DoubleDouble& x, double d) {
    const DoubleDouble c = TwoProd(x.hi_, d);
    const DoubleDouble z = FastTwoSum(c.hi_, c.lo_ + x.lo_ * d);
    return Checked(z, x.hi_ * d);
  }
  friend DoubleDouble operator*(double d, const DoubleDouble& x) { return x * d; }

  // Long division, one double quotient digit at a time, each from an accurate remainder:
  //   q1 = RN(xh / yh),  R1 = x - q1 y,  q2 = RN(R1h / yh),  R2 = R1 - q2 y,  q3 = RN(R2h / yh).
  // q1 is within 3u of q = x/y (xl/xh, yl/yh and the rounding, each <= u), so |R1| <= 3u|q y|.
  // R1 is formed with errors O(u^3 |x|): q1*yh = ph + pl and q1*yl = bh + bl exactly (FMA), and
  // xh - ph is exact (Sterbenz: ph/xh lies in [(1-u)^2, (1+u)^2]). q2 approximates R1/y within
  // 3u relative (R1l, yl, rounding), so |R2| <= 9u^2 |q y| and q3 is wrong by at most 27u^3 |q|.
  // Finally q1 + q2 is renormalised exactly and q3 added (JMP Alg. 4): since |q3| is far below
  // ulp(q1)/2 only the low word is rounded, an error <= u * u|q|. Total u^2 + O(u^3).
  // (A dividend below 2^-900 is scaled up by 2^200 first, so that those products stay exact.)
  friend DoubleDouble operator/(const DoubleDouble& x, const DoubleDouble& y) {
    return Divide(x, y);
  }
  // The same with yl = 0 (the q1*yl terms vanish).
  friend DoubleDouble operator/(const DoubleDouble& x, double d) { return Divide(x, d); }
  friend DoubleDouble operator/(double d, const DoubleDouble& y) { return DoubleDouble(d) / y; }

  // Integers of any width convert exactly first (int64 beyond 2^53 included); those of up to
  // 32 bits as doubles, which selects the cheaper mixed operation.
  template <std::integral T>
  friend DoubleDouble operator+(const DoubleDouble& x, T n) {
    return x + Widen(n);
  }
  template <std::integral T>
  friend DoubleDouble operator+(T n, const DoubleDouble& x) {
    return x + Widen(n);
  }
  template <std::integral T>
  friend DoubleDouble operator-(const DoubleDouble& x, T n) {
    return x - Widen(n);
  }
  template <std::integral T>
  friend DoubleDouble operator-(T n, const DoubleDouble& x) {
    return Widen(n) - x;
  }
  template <std::integral T>
  friend DoubleDouble operator*(const DoubleDouble& x, T n) {
    return x * Widen(n);
  }
  template <std::integral T>
  friend DoubleDouble operator*(T n, const DoubleDouble& x) {
    return x * Widen(n);
  }
  template <std::integral T>
  friend DoubleDouble operator/(const DoubleDouble& x, T n) {
    return x / Widen(n);
  }
  template <std::integral T>
  friend DoubleDouble operator/(T n, const DoubleDouble& x) {
    return Widen(n) / x;
  }

  // x op= y is x = x op y, for every y that x op y accepts.
  template <typename T>
  DoubleDouble& operator+=(const T& y) {
    return *this = *this + y;
  }
  template <typename T>
  DoubleDouble& operator-=(const T& y) {
    return *this = *this - y;
  }
  template <typename T>
  DoubleDouble& operator*=(const T& y) {
    return *this = *this * y;
  }
  template <typename T>
  DoubleDouble& operator/=(const T& y) {
    return *this = *this / y;
  }

  // --- Comparisons: exact. A normalised pair is unique (hi is the value rounded to nearest
  // even, lo the exact rest), so ordering is lexicographic on (hi, lo); NaN is unordered. ---

  friend constexpr bool operator==(const DoubleDouble& x, const DoubleDouble& y) {
    return x.hi_ == y.hi_ && x.lo_ == y.lo_;
  }
  friend constexpr std::partial_ordering operator<=>(const DoubleDouble& x, const DoubleDouble& y) {
    return x.hi_ != y.hi_ ? x.hi_ <=> y.hi_ : x.lo_ <=> y.lo_;
  }
  friend constexpr bool operator==(const DoubleDouble& x, double d) {
    return x.hi_ == d && x.lo_ == 0;
  }
  friend constexpr std::partial_ordering operator<=>(const DoubleDouble& x, double d) {
    return x.hi_ != d ? x.hi_ <=> d : x.lo_ <=> 0.0;
  }
  template <std::integral T>
  friend constexpr bool operator==(const DoubleDouble& x, T n) {
    return x == Widen(n);
  }
  template <std::integral T>
  friend constexpr std::partial_ordering operator<=>(const DoubleDouble& x, T n) {
    return x <=> Widen(n);
  }

  // --- Functions (found by argument-dependent lookup only). ---

  // Nearest double: hi (+ lo, which does not change a normalised pair).
  friend constexpr double ToDouble(const DoubleDouble& x) { return x.hi_ + x.lo_; }
  friend bool IsNaN(const DoubleDouble& x) { return std::isnan(x.hi_); }
  friend bool IsInf(const DoubleDouble& x) { return std::isinf(x.hi_); }
  friend bool IsFinite(const DoubleDouble& x) { return std::isfinite(x.hi_); }

  // Exact (negation of both words); abs(-0) is +0.
  friend DoubleDouble abs(const DoubleDouble& x) { return std::signbit(x.hi_) ? -x : x; }

  // x * 2^e: exact unless the result leaves the full-precision range (then the words are
  // rounded separately, absolute error <= 2^-1074, or +-inf on overflow).
  friend DoubleDouble ldexp(const DoubleDouble& x, int e) {
    const double hi = std::ldexp(x.hi_, e);
    if (!std::isfinite(hi)) return DoubleDouble(hi);
    return FastTwoSum(hi, std::ldexp(x.lo_, e));  // renormalise if lo was rounded
  }

  // One Newton step from s = RN(sqrt(xh)): sqrt(x) = s + R/(sqrt(x) + s) with R = x - s^2.
  // R is formed to O(u^3 x): s*s = ph + pl exactly (FMA), xh - ph is exact (Sterbenz: ph/xh is
  // in [(1-u)^3, (1+u)^3]), R = (xh - ph) + xl - pl with one DoubleDouble - double step
  // (2u^2 |R|), and |R| <= 3u xh. The correction t = RN(Rh / 2s) errs by
  // u|t| (dropping Rl) + u|t| (division) + (sqrt(x) - s)^2 / 2s (Newton), each with
  // |t| <= 1.5u sqrt(x): 4.125 u^2 sqrt(x) in all. Outside [2^-900, 2^900] x is first scaled by
  // 2^-+600 (exact) so that s*s neither underflows nor overflows.
  // sqrt(+-0) = +-0, sqrt(x < 0) = NaN, sqrt(inf) = inf.
  friend DoubleDouble sqrt(const DoubleDouble& x) {
    const double xh = x.hi_;
    if (!(xh > 0) || !std::isfinite(xh)) return DoubleDouble(std::sqrt(xh));
    if (xh < 0x1p-900) return ScaleWords(SqrtNormal(ScaleWords(x, 0x1p600)), 0x1p-300);
    if (xh > 0x1p900) return ScaleWords(SqrtNormal(ScaleWords(x, 0x1p-600)), 0x1p300);
    return SqrtNormal(x);
  }

  // Elementary functions (double_double.cc), relative error <= 2^-100 (64 units) as above.
  // exp: 0 for x < -1075 ln 2 = -745.1332191019411... (e^x below half the smallest subnormal),
  //   +inf for x > ln(2^1024 - 2^970) = 709.78271289338399... (e^x rounds to inf as a double).
  //   Results in the subnormal range are e^x correctly rounded to the 2^-1074 grid (from the
  //   double-double value, so to within 2^-1075 (1 + 2^-100) of e^x), with lo = 0; between 2^-1022
  //   and 2^-968 lo is rounded to that grid (absolute error <= 2^-1075 on top of the relative
  //   bound). exp(-inf) = 0, exp(inf) = inf, exp(NaN) = NaN.
  // expm1: e^x - 1, relative accuracy for every x (no cancellation near 0); -1 at -inf.
  // tanh: relative accuracy for every x (no cancellation near 0); exactly +-1 for |x| > 40
  //   (where 1 - tanh|x| < 2e^-80 < 2^-114); tanh(+-0) = +-0, tanh(+-inf) = +-1.
  // log: natural logarithm, relative accuracy for every x > 0 (including near 1, where it goes
  //   through expm1 without cancellation); log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
  friend DoubleDouble exp(const DoubleDouble& x);
  friend DoubleDouble expm1(const DoubleDouble& x);
  friend DoubleDouble tanh(const DoubleDouble& x);
  friend DoubleDouble log(const DoubleDouble& x);

  // Prints hi and lo with 17 significant digits (enough to read both back exactly), e.g.
  // "1 + 8.6736173798840355e-19" for 1 + 2^-60.
  friend std::ostream& operator<<(std::ostream& os, const DoubleDouble& x);

 private:
  // n exactly, as a double if it has at most 32 bits, else as a pair.
  template <std::integral T>
  static constexpr auto Widen(T n) {
    if constexpr (sizeof(T) < 8) {
      return static_cast<double>(n);
    } else {
      return DoubleDouble(n);
    }
  }

  // --- Error-free transforms. u = 2^-53; exact unless noted. ---

  // Knuth's TwoSum (no branch, no ordering requirement): s = RN(a + b), e = a + b - s exactly.
  // If a + b overflows, s = +-inf and e is NaN or inf (the callers check).
  static constexpr DoubleDouble TwoSum(double a, double b) {
    const double s = a + b;
    const double b_virtual = s - a;          // the part of b that made it into s
    const double a_virtual = s - b_virtual;  // the part of a that made it into s
    return FromParts(s, (a - a_virtual) + (b - b_virtual));
  }

  // Dekker's FastTwoSum: exact when the exponent of a is >= that of b (e.g. |a| >= |b|).
  static constexpr DoubleDouble FastTwoSum(double a, double b) {
    const double s = a + b;
    return FromParts(s, b - (s - a));
  }

  // p = RN(a*b), e = a*b - p exactly by one FMA, provided a*b does not overflow and e is not
  // below the subnormal threshold (|a*b| >= 2^-969 suffices).
  static DoubleDouble TwoProd(double a, double b) {
    const double p = a * b;
    return FromParts(p, std::fma(a, b, -p));
  }

  // z if its low word is finite (then so is its high word), else the IEEE result of the same
  // operation on the leading words, `leading`, as a clean (value, 0). With finite operands the
  // fast path can only fail by overflowing (TwoSum and FMA raise no other exception), so a
  // finite `leading` then means the value was within an error bound of the overflow threshold
  // and the result is the infinity of its sign.
  static DoubleDouble Checked(const DoubleDouble& z, double leading) {
    if (std::isfinite(z.lo_)) [[likely]] {
      return z;
    }
    return DoubleDouble(std::isfinite(leading) ? std::copysign(kInf, leading) : leading);
  }

  // Both words times a power of two f, exact when neither leaves the normal range.
  static constexpr DoubleDouble ScaleWords(const DoubleDouble& x, double f) {
    return FromParts(x.hi_ * f, x.lo_ * f);
  }

  // x / y by long division (see operator/): a non-finite low word on overflow or special
  // operands, and the last step is unchecked so that it stays so.
  static DoubleDouble DivideFinite(const DoubleDouble& x, const DoubleDouble& y) {
    const double q1 = x.hi_ / y.hi_;
    const DoubleDouble p = TwoProd(q1, y.hi_);  // q1*yh = ph + pl
    const DoubleDouble b = TwoProd(q1, y.lo_);  // q1*yl = bh + bl
    // R1 = (xh - ph) + xl - pl - bh - bl: the first two exactly, then three DoubleDouble - double
    // steps, each with error <= 2u^2 of a partial sum that is <= 5u|x|.
    const DoubleDouble r1 = ((TwoSum(x.hi_ - p.hi_, x.lo_) - p.lo_) - b.hi_) - b.lo_;
    const double q2 = r1.hi_ / y.hi_;
    const DoubleDouble r2 = r1 - y * q2;  // errors O(u^2 |R1|) = O(u^3 |x|)
    const double q3 = r2.hi_ / y.hi_;
    return AddUnchecked(FastTwoSum(q1, q2), q3);  // |q2| <= 3u|q1|: FastTwoSum applies
  }
  static DoubleDouble DivideFinite(const DoubleDouble& x, double d) {
    const double q1 = x.hi_ / d;
    const DoubleDouble p = TwoProd(q1, d);
    const DoubleDouble r1 = TwoSum(x.hi_ - p.hi_, x.lo_) - p.lo_;  // xh - ph exact (Sterbenz)
    const double q2 = r1.hi_ / d;
    const DoubleDouble r2 = r1 - TwoProd(q2, d);
    const double q3 = r2.hi_ / d;
    return AddUnchecked(FastTwoSum(q1, q2), q3);
  }

  // x / y for a DoubleDouble or double y: the fast path, a scaled one for tiny dividends, and
  // DivideSpecial when the low word comes out non-finite.
  template <typename Divisor>
  static DoubleDouble Divide(const DoubleDouble& x, const Divisor& y) {
    if (std::fabs(x.hi_) < 0x1p-900) [[unlikely]] {
      // (x 2^200) / y cannot overflow (|y| >= 2^-1074); scaling back is exact unless the
      // quotient is below the full-precision range.
      const DoubleDouble q = DivideFinite(ScaleWords(x, 0x1p200), y);
      if (!std::isfinite(q.lo_)) return DivideSpecial(x, DoubleDouble(y));
      return ScaleDown(q, 0x1p-200);
    }
    const DoubleDouble q = DivideFinite(x, y);
    return std::isfinite(q.lo_) ? q : DivideSpecial(x, DoubleDouble(y));
  }

  // JMP Algorithm 4 without the overflow check (see operator+).
  static DoubleDouble AddUnchecked(const DoubleDouble& x, double d) {
    const DoubleDouble s = TwoSum(x.hi_, d);
    return FastTwoSum(s.hi_, x.lo_ + s.lo_);
  }

  // x / y when DivideFinite failed. Non-finite or zero divisor, or non-finite dividend: IEEE
  // semantics of xh / yh. Otherwise both are finite and the quotient (or the intermediate
  // q1*yh, when xh is near the overflow threshold) overflowed: retry with x/4, whose product
  // cannot overflow, and scale back by 4 (to +-inf if the quotient really overflows).
  static DoubleDouble DivideSpecial(const DoubleDouble& x, const DoubleDouble& y) {
    const double leading = x.hi_ / y.hi_;
    if (!std::isfinite(x.hi_) || !std::isfinite(y.hi_) || y.hi_ == 0) {
      return DoubleDouble(leading);
    }
    const DoubleDouble q = DivideFinite(ScaleWords(x, 0.25), y);
    const DoubleDouble z = ScaleWords(q, 4);  // exact, or an infinite hi
    if (!std::isfinite(q.lo_) || !std::isfinite(z.hi_))
      return DoubleDouble(std::copysign(kInf, leading));
    return z;
  }

  // x * f for a power of two f < 1. Exact while |x f| >= 2^-968; the low word alone may be
  // rounded below that (to the 2^-1074 grid, far below ulp(hi)/2, so the pair stays normalised).
  // Below 2^-968 both words may be rounded and the pair is renormalised; there the products go
  // through std::fma(a, b, 0) = RN(a b), which a compiler cannot contract into the TwoSum that
  // consumes them (a contracted TwoSum would no longer be exact).
  static DoubleDouble ScaleDown(const DoubleDouble& x, double f) {
    const double hi = x.hi_ * f;
    if (std::fabs(hi) >= 0x1p-968) return FromParts(hi, x.lo_ * f);
    return TwoSum(std::fma(x.hi_, f, 0.0), std::fma(x.lo_, f, 0.0));
  }

  // REQUIRES: 2^-900 <= x.hi() <= 2^900 (see sqrt).
  static DoubleDouble SqrtNormal(const DoubleDouble& x) {
    const double s = std::sqrt(x.hi_);
    const DoubleDouble p = TwoProd(s, s);
    const DoubleDouble r = TwoSum(x.hi_ - p.hi_, x.lo_) - p.lo_;  // R = x - s^2, error O(u^3 x)
    return FastTwoSum(s, r.hi_ / (2 * s));                        // |t| <= 1.5u s: ordered
  }

  static constexpr double kInf = std::numeric_limits<double>::infinity();

  double hi_ = 0;
  double lo_ = 0;
};

// The constants of double_double.cc, here so that the test can re-derive them from Real.
// Obtained with mpmath at 400 bits by the greedy split c = RN(c) + RN(c - RN(c)) + ...; the test
// recomputes each from cpp_bin_float_50 (168 bits) and requires equality.
namespace double_double_internal {

// ln 2 = kLn2Hi + kLn2Mid + kLn2Lo with error below 2^-163 (the three words of its greedy
// split, each the double nearest to what the previous ones leave).
inline constexpr double kLn2Hi = 0x1.62e42fefa39efp-1;
inline constexpr double kLn2Mid = 0x1.abc9e3b39803fp-56;
inline constexpr double kLn2Lo = 0x1.7b57a079a1934p-111;

// 1/n! for n = 2..10 as normalised pairs (relative error <= 2^-106), and for n = 11..18 as the
// nearest doubles (only their leading bits reach the result, see ExpM1Small).
inline constexpr DoubleDouble kInvFactorial[] = {
    DoubleDouble::FromParts(0x1p-1, 0),
    DoubleDouble::FromParts(0x1.5555555555555p-3, 0x1.5555555555555p-57),
    DoubleDouble::FromParts(0x1.5555555555555p-5, 0x1.5555555555555p-59),
    DoubleDouble::FromParts(0x1.1111111111111p-7, 0x1.1111111111111p-63),
    DoubleDouble::FromParts(0x1.6c16c16c16c17p-10, -0x1.f49f49f49f49fp-65),
    DoubleDouble::FromParts(0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-73),
    DoubleDouble::FromParts(0x1.a01a01a01a01ap-16, 0x1.a01a01a01a01ap-76),
    DoubleDouble::FromParts(0x1.71de3a556c734p-19, -0x1.c154f8ddc6c00p-73),
    DoubleDouble::FromParts(0x1.27e4fb7789f5cp-22, 0x1.cbbc05b4fa99ap-76),
};
inline constexpr int kInvFactorialFirst = 2;  // kInvFactorial[i] = 1/(i + 2)!
inline constexpr double kInvFactorialTail[] = {
    0x1.ae64567f544e4p-26, 0x1.1eed8eff8d898p-29, 0x1.6124613a86d09p-33, 0x1.93974a8c07c9dp-37,
    0x1.ae7f3e733b81fp-41, 0x1.ae7f3e733b81fp-45, 0x1.952c77030ad4ap-49, 0x1.6827863b97d97p-53,
};
inline constexpr int kInvFactorialTailFirst = 11;  // kInvFactorialTail[i] = 1/(i + 11)!

}  // namespace double_double_internal
}  // namespace kvcheck::reference

// digits = 106 (53 + 53 bits) and epsilon = 2^(1 - digits), by analogy with double's; they
// describe the precision the error bounds are stated in, not the gap to the next value (a pair
// (1, 2^-1074) exists). min is the smallest value with the full 106 bits (lo above 2^-1074);
// max is (DBL_MAX, the largest lo that still rounds to it).
template <>
struct std::numeric_limits<kvcheck::reference::DoubleDouble> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = false;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 106;
  static constexpr int digits10 = 31;      // floor((digits - 1) log10 2)
  static constexpr int max_digits10 = 33;  // ceil(1 + digits log10 2)
  static constexpr int radix = 2;
  static constexpr int min_exponent = -967;  // min() = 2^(min_exponent - 1)
  static constexpr int min_exponent10 = -291;
  static constexpr int max_exponent = 1024;
  static constexpr int max_exponent10 = 308;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  static constexpr kvcheck::reference::DoubleDouble min() noexcept { return 0x1p-968; }
  static constexpr kvcheck::reference::DoubleDouble lowest() noexcept { return -max(); }
  static constexpr kvcheck::reference::DoubleDouble max() noexcept {
    return kvcheck::reference::DoubleDouble::FromParts(0x1.fffffffffffffp1023,
                                                       0x1.fffffffffffffp969);
  }
  static constexpr kvcheck::reference::DoubleDouble epsilon() noexcept { return 0x1p-105; }
  static constexpr kvcheck::reference::DoubleDouble round_error() noexcept { return 0.5; }
  static constexpr kvcheck::reference::DoubleDouble infinity() noexcept {
    return std::numeric_limits<double>::infinity();
  }
  static constexpr kvcheck::reference::DoubleDouble quiet_NaN() noexcept {
    return std::numeric_limits<double>::quiet_NaN();
  }
  static constexpr kvcheck::reference::DoubleDouble signaling_NaN() noexcept { return quiet_NaN(); }
  static constexpr kvcheck::reference::DoubleDouble denorm_min() noexcept { return 0x1p-1074; }
};

#endif  // KVCHECK_REFERENCE_DOUBLE_DOUBLE_H_
