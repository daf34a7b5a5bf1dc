// File: real.h
// Real: the reference engine's number type, a 50-decimal-digit binary float
// (boost::multiprecision::cpp_bin_float_50: 168-bit significand, 32-bit exponent).
//
// Every f32/f16/bf16 value converts to Real exactly, a product of two f32 values is exact, and
// sums of a few thousand such products are exact to far below one f32 ulp. The exponent range
// is large enough that exp() of any attention score never underflows or overflows. Real
// follows IEEE rules for inf and NaN (0 * inf = NaN, inf - inf = NaN).
#ifndef KVCHECK_REFERENCE_REAL_H_
#define KVCHECK_REFERENCE_REAL_H_

#include <cmath>

#include <boost/multiprecision/cpp_bin_float.hpp>

namespace kvcheck::reference {

using Real = boost::multiprecision::cpp_bin_float_50;

inline bool IsNaN(const Real& x) { return boost::multiprecision::isnan(x); }
inline bool IsInf(const Real& x) { return boost::multiprecision::isinf(x); }
inline bool IsFinite(const Real& x) { return boost::multiprecision::isfinite(x); }

// Nearest double (for bound arithmetic and reports; not for the reference values).
inline double ToDouble(const Real& x) { return x.convert_to<double>(); }

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_REAL_H_
