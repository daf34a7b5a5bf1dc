// File: real.h
// Real: the reference engine's number type, a 50-decimal-digit binary float
// (boost::multiprecision::cpp_bin_float_50: 168-bit significand, 32-bit exponent).
//
// Every f32/f16/bf16 value converts to Real exactly, a product of two f32 values is exact, and
// sums of a few thousand such products are exact to far below one f32 ulp. The exponent is a
// 32-bit integer: exp(x) underflows to 0 for x below about -1.49e9 (a softmax weight that
// small is flushed: reference_attention.h says why that is harmless) and overflows far
// beyond any attention score. Real follows IEEE rules for inf and NaN (0 * inf = NaN,
// inf - inf = NaN). The helpers below take any Boost.Multiprecision number (the reference
// also runs in cpp_bin_float_100 as ground truth).
#ifndef KVCHECK_REFERENCE_REAL_H_
#define KVCHECK_REFERENCE_REAL_H_

#include <cmath>

#include <boost/multiprecision/cpp_bin_float.hpp>

namespace kvcheck::reference {

using Real = boost::multiprecision::cpp_bin_float_50;

template <class Backend, boost::multiprecision::expression_template_option Templates>
bool IsNaN(const boost::multiprecision::number<Backend, Templates>& x) {
  return boost::multiprecision::isnan(x);
}
template <class Backend, boost::multiprecision::expression_template_option Templates>
bool IsInf(const boost::multiprecision::number<Backend, Templates>& x) {
  return boost::multiprecision::isinf(x);
}
template <class Backend, boost::multiprecision::expression_template_option Templates>
bool IsFinite(const boost::multiprecision::number<Backend, Templates>& x) {
  return boost::multiprecision::isfinite(x);
}

// Nearest double (for bound arithmetic and reports).
template <class Backend, boost::multiprecision::expression_template_option Templates>
double ToDouble(const boost::multiprecision::number<Backend, Templates>& x) {
  return x.template convert_to<double>();
}

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_REAL_H_
