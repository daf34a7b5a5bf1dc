// File: metal_stdlib.h
// The emulator's <metal_stdlib>: what a .metal kernel sees once msl_translate has turned it
// into C++ (msl_translate.cc). Supported subset, growing with the kernels that need it:
//   - address spaces `device`, `constant`, `thread`, `threadgroup` (qualifiers vanish;
//     threadgroup declarations in a function are shared per threadgroup by the translator;
//     `device T*` becomes a bounds-checked DevicePtr<T>, device_pointer.h);
//   - scalars: bool, char, uchar, short, ushort, int, uint, long, ulong, float, `half` (IEEE
//     binary16; every half operation rounds its f32 result to nearest even, as the GPU's) and
//     `bfloat` (the same with 8 significand bits);
//   - vectors vec<T, N> and the named ones (float2..4, half2..4, int2..4, uint2..4, ...) with
//     .x .y .z .w, [i], elementwise arithmetic with vectors and scalars;
//   - math: exp, exp2, log, sqrt, rsqrt, abs/fabs, tanh, max, min, fma, clamp, select, isnan,
//     isinf, isfinite, with fast:: and precise:: (on a CPU both are the correctly rounded-ish
//     libm result: the emulator does not model fast::exp's ulps);
//   - simd_sum, simd_max, simd_min, simd_shuffle_xor, simd_broadcast (simt_executor.h order);
//     threadgroup_barrier, simdgroup_barrier with mem_flags;
//   - numeric_limits<T>.
//   - simdgroup_matrix<T, 8, 8> with simdgroup_load / simdgroup_store /
//     simdgroup_multiply(_accumulate) and thread_elements() (layout and order below).
// Not yet: atomics, textures.
#ifndef KVCHECK_SRC_METAL_MSL_CPU_METAL_STDLIB_H_
#define KVCHECK_SRC_METAL_MSL_CPU_METAL_STDLIB_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "src/metal/msl_cpu/msl_runtime.h"
#include "src/metal/msl_cpu/simt_executor.h"
#include "src/tensor/dtype.h"

#define device
#define constant const
#define thread
#define threadgroup
#define kernel

namespace metal {

using uchar = uint8_t;
using ushort = uint16_t;
using uint = uint32_t;
using ulong = uint64_t;

// ---- half and bfloat ------------------------------------------------------------------------

struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(kvcheck::F32ToF16Bits(f)) {}  // NOLINT: implicit, as in MSL
  half(double f) : half(static_cast<float>(f)) {}    // NOLINT
  half(int i) : half(static_cast<float>(i)) {}       // NOLINT
  half(uint i) : half(static_cast<float>(i)) {}      // NOLINT
  operator float() const { return kvcheck::F16BitsToF32(bits); }
  half& operator+=(half o) { return *this = half(float(*this) + float(o)); }
  half& operator-=(half o) { return *this = half(float(*this) - float(o)); }
  half& operator*=(half o) { return *this = half(float(*this) * float(o)); }
  half& operator/=(half o) { return *this = half(float(*this) / float(o)); }
};

struct bfloat {
  uint16_t bits = 0;
  bfloat() = default;
  bfloat(float f) : bits(kvcheck::F32ToBF16Bits(f)) {}  // NOLINT
  bfloat(double f) : bfloat(static_cast<float>(f)) {}   // NOLINT
  bfloat(int i) : bfloat(static_cast<float>(i)) {}      // NOLINT
  operator float() const { return kvcheck::BF16BitsToF32(bits); }
  bfloat& operator+=(bfloat o) { return *this = bfloat(float(*this) + float(o)); }
  bfloat& operator-=(bfloat o) { return *this = bfloat(float(*this) - float(o)); }
  bfloat& operator*=(bfloat o) { return *this = bfloat(float(*this) * float(o)); }
  bfloat& operator/=(bfloat o) { return *this = bfloat(float(*this) / float(o)); }
};

// half op half is a half (the f32 result rounded once: exact for + - * / since f32 has more
// than 2 x 11 + 2 significand bits); half op float is a float.
#define KVCHECK_MSL_SMALL_FLOAT_OPS(T)                                          \
  inline T operator+(T a, T b) { return T(float(a) + float(b)); }               \
  inline T operator-(T a, T b) { return T(float(a) - float(b)); }               \
  inline T operator*(T a, T b) { return T(float(a) * float(b)); }               \
  inline T operator/(T a, T b) { return T(float(a) / float(b)); }               \
  inline T operator-(T a) { return T(-float(a)); }                              \
  inline float operator+(T a, float b) { return float(a) + b; }                 \
  inline float operator+(float a, T b) { return a + float(b); }                 \
  inline float operator-(T a, float b) { return float(a) - b; }                 \
  inline float operator-(float a, T b) { return a - float(b); }                 \
  inline float operator*(T a, float b) { return float(a) * b; }                 \
  inline float operator*(float a, T b) { return a * float(b); }                 \
  inline float operator/(T a, float b) { return float(a) / b; }                 \
  inline float operator/(float a, T b) { return a / float(b); }                 \
  inline bool operator<(T a, T b) { return float(a) < float(b); }               \
  inline bool operator>(T a, T b) { return float(a) > float(b); }               \
  inline bool operator<=(T a, T b) { return float(a) <= float(b); }             \
  inline bool operator>=(T a, T b) { return float(a) >= float(b); }             \
  inline bool operator==(T a, T b) { return float(a) == float(b); }             \
  inline bool operator!=(T a, T b) { return float(a) != float(b); }
KVCHECK_MSL_SMALL_FLOAT_OPS(half)
KVCHECK_MSL_SMALL_FLOAT_OPS(bfloat)
#undef KVCHECK_MSL_SMALL_FLOAT_OPS

// ---- Vectors --------------------------------------------------------------------------------

template <typename T, int N>
struct vec;

template <typename T>
struct vec<T, 2> {
  T x{}, y{};
  vec() = default;
  vec(T s) : x(s), y(s) {}  // NOLINT
  vec(T a, T b) : x(a), y(b) {}
  template <typename U>
  explicit vec(const vec<U, 2>& o) : x(T(o.x)), y(T(o.y)) {}
  T& operator[](int i) { return i == 0 ? x : y; }
  const T& operator[](int i) const { return i == 0 ? x : y; }
};

template <typename T>
struct vec<T, 3> {
  T x{}, y{}, z{};
  vec() = default;
  vec(T s) : x(s), y(s), z(s) {}  // NOLINT
  vec(T a, T b, T c) : x(a), y(b), z(c) {}
  template <typename U>
  explicit vec(const vec<U, 3>& o) : x(T(o.x)), y(T(o.y)), z(T(o.z)) {}
  T& operator[](int i) { return i == 0 ? x : i == 1 ? y : z; }
  const T& operator[](int i) const { return i == 0 ? x : i == 1 ? y : z; }
};

template <typename T>
struct vec<T, 4> {
  T x{}, y{}, z{}, w{};
  vec() = default;
  vec(T s) : x(s), y(s), z(s), w(s) {}  // NOLINT
  vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
  template <typename U>
  explicit vec(const vec<U, 4>& o) : x(T(o.x)), y(T(o.y)), z(T(o.z)), w(T(o.w)) {}
  T& operator[](int i) { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
  const T& operator[](int i) const { return i == 0 ? x : i == 1 ? y : i == 2 ? z : w; }
};

#define KVCHECK_MSL_VEC_OP(op)                                                     \
  template <typename T, int N>                                                     \
  vec<T, N> operator op(const vec<T, N>& a, const vec<T, N>& b) {                  \
    vec<T, N> r;                                                                   \
    for (int i = 0; i < N; ++i) r[i] = T(a[i] op b[i]);                            \
    return r;                                                                      \
  }                                                                                \
  template <typename T, int N>                                                     \
  vec<T, N> operator op(const vec<T, N>& a, T b) {                                 \
    vec<T, N> r;                                                                   \
    for (int i = 0; i < N; ++i) r[i] = T(a[i] op b);                               \
    return r;                                                                      \
  }                                                                                \
  template <typename T, int N>                                                     \
  vec<T, N> operator op(T a, const vec<T, N>& b) {                                 \
    vec<T, N> r;                                                                   \
    for (int i = 0; i < N; ++i) r[i] = T(a op b[i]);                               \
    return r;                                                                      \
  }                                                                                \
  template <typename T, int N>                                                     \
  vec<T, N>& operator op##=(vec<T, N>& a, const vec<T, N>& b) {                    \
    return a = a op b;                                                             \
  }                                                                                \
  template <typename T, int N>                                                     \
  vec<T, N>& operator op##=(vec<T, N>& a, T b) {                                   \
    return a = a op b;                                                             \
  }
KVCHECK_MSL_VEC_OP(+)
KVCHECK_MSL_VEC_OP(-)
KVCHECK_MSL_VEC_OP(*)
KVCHECK_MSL_VEC_OP(/)
#undef KVCHECK_MSL_VEC_OP

#define KVCHECK_MSL_VEC_NAMES(T, name) \
  using name##2 = vec<T, 2>;           \
  using name##3 = vec<T, 3>;           \
  using name##4 = vec<T, 4>;
KVCHECK_MSL_VEC_NAMES(float, float)
KVCHECK_MSL_VEC_NAMES(half, half)
KVCHECK_MSL_VEC_NAMES(bfloat, bfloat)
KVCHECK_MSL_VEC_NAMES(int, int)
KVCHECK_MSL_VEC_NAMES(uint, uint)
KVCHECK_MSL_VEC_NAMES(short, short)
KVCHECK_MSL_VEC_NAMES(ushort, ushort)
KVCHECK_MSL_VEC_NAMES(bool, bool)
KVCHECK_MSL_VEC_NAMES(ulong, ulong)
#undef KVCHECK_MSL_VEC_NAMES

// ---- Math -------------------------------------------------------------------------------------

template <typename T>
using numeric_limits = std::numeric_limits<T>;

// Scalars of a small float type compute in f32 and round back.
#define KVCHECK_MSL_UNARY(name, expr)                                   \
  inline float name(float x) { return expr; }                           \
  inline half name(half x) { return half(name(float(x))); }             \
  inline bfloat name(bfloat x) { return bfloat(name(float(x))); }
KVCHECK_MSL_UNARY(exp, std::exp(x))
KVCHECK_MSL_UNARY(exp2, std::exp2(x))
KVCHECK_MSL_UNARY(log, std::log(x))
KVCHECK_MSL_UNARY(log2, std::log2(x))
KVCHECK_MSL_UNARY(sqrt, std::sqrt(x))
KVCHECK_MSL_UNARY(rsqrt, 1.0f / std::sqrt(x))
KVCHECK_MSL_UNARY(tanh, std::tanh(x))
KVCHECK_MSL_UNARY(fabs, std::fabs(x))
KVCHECK_MSL_UNARY(abs, std::fabs(x))
KVCHECK_MSL_UNARY(floor, std::floor(x))
KVCHECK_MSL_UNARY(ceil, std::ceil(x))
#undef KVCHECK_MSL_UNARY

inline int abs(int x) { return x < 0 ? -x : x; }

// max / min: with a NaN operand the other one (fmax semantics, as Metal's).
template <typename T>
T max(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return a > b ? a : b;
  } else {
    return T(std::fmax(float(a), float(b)));
  }
}
template <typename T>
T min(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return a < b ? a : b;
  } else {
    return T(std::fmin(float(a), float(b)));
  }
}
template <typename T>
T clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline half fma(half a, half b, half c) { return half(std::fma(float(a), float(b), float(c))); }
template <typename T>
T select(T a, T b, bool c) {
  return c ? b : a;
}
inline bool isnan(float x) { return std::isnan(x); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool isfinite(float x) { return std::isfinite(x); }

// fast:: and precise:: name the same functions here: the emulator does not model fast::'s
// ulps (docs/metal.md: what the emulator proves and what it does not).
namespace fast {
using metal::exp;
using metal::exp2;
using metal::log;
using metal::max;
using metal::min;
using metal::rsqrt;
using metal::tanh;
}  // namespace fast

namespace precise {
using metal::exp;
using metal::exp2;
using metal::log;
using metal::rsqrt;
using metal::tanh;
}  // namespace precise

// ---- Simd functions and barriers ------------------------------------------------------------

enum class mem_flags : uint32_t {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
};
inline mem_flags operator|(mem_flags a, mem_flags b) {
  return static_cast<mem_flags>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

inline void threadgroup_barrier(mem_flags, kvcheck::metal::CallSite where = {}) {
  kvcheck::metal::ThreadgroupBarrier(where);
}
inline void simdgroup_barrier(mem_flags, kvcheck::metal::CallSite where = {}) {
  kvcheck::metal::SimdgroupBarrier(where);
}

inline float simd_sum(float x, kvcheck::metal::CallSite where = {}) {
  return kvcheck::metal::SimdSum(x, where);
}
inline int simd_sum(int x, kvcheck::metal::CallSite where = {}) {
  return kvcheck::metal::SimdSum(static_cast<int32_t>(x), where);
}
inline uint simd_sum(uint x, kvcheck::metal::CallSite where = {}) {
  return kvcheck::metal::SimdSum(static_cast<uint32_t>(x), where);
}
inline half simd_sum(half x, kvcheck::metal::CallSite where = {}) {
  return half(kvcheck::metal::SimdSum(float(x), where));
}
inline float simd_max(float x, kvcheck::metal::CallSite where = {}) {
  return kvcheck::metal::SimdMax(x, where);
}
inline float simd_min(float x, kvcheck::metal::CallSite where = {}) {
  return kvcheck::metal::SimdMin(x, where);
}
template <typename T>
T simd_shuffle_xor(T x, ushort mask, kvcheck::metal::CallSite where = {}) {
  return kvcheck::metal::SimdShuffleXor(x, mask, where);
}
template <typename T>
T simd_broadcast(T x, ushort lane, kvcheck::metal::CallSite where = {}) {
  return kvcheck::metal::SimdBroadcast(x, lane, where);
}

// ---- simdgroup_matrix ---------------------------------------------------------------------
// An 8 x 8 matrix spread over the 32 lanes of a simdgroup, two elements per lane, in the
// layout MLX's steel kernels assume (simt_executor.h, SimdMatrixRow / SimdMatrixCol). Loads
// and stores are per lane; a product is a simd function (every lane must take part) that forms
// A B + C once for the simdgroup in f32, sums over k = 0..7 in that order, and rounds each
// lane's two elements once to T.

using kvcheck::metal::SimdMatrixCol;
using kvcheck::metal::SimdMatrixRow;

template <typename T, int Rows, int Cols>
struct simdgroup_matrix {
  static_assert(Rows == 8 && Cols == 8, "the emulator supports 8 x 8 simdgroup matrices");
  vec<T, 2> elements;
  simdgroup_matrix() = default;
  explicit simdgroup_matrix(T diagonal) {
    const uint lane = kvcheck::metal::CurrentThread().thread_index_in_simdgroup;
    const int r = SimdMatrixRow(lane), c = SimdMatrixCol(lane);
    elements = vec<T, 2>(r == c ? diagonal : T(0), r == c + 1 ? diagonal : T(0));
  }
  vec<T, 2>& thread_elements() { return elements; }
  const vec<T, 2>& thread_elements() const { return elements; }
};

using simdgroup_float8x8 = simdgroup_matrix<float, 8, 8>;
using simdgroup_half8x8 = simdgroup_matrix<half, 8, 8>;
using simdgroup_bfloat8x8 = simdgroup_matrix<bfloat, 8, 8>;

template <typename T, int R, int C>
simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, R, C> m;
  m.elements = vec<T, 2>(value, value);
  return m;
}

// Element (r, c) at src[(origin.y + r) * elements_per_row + origin.x + c]; transposed, at
// src[(origin.y + c) * elements_per_row + origin.x + r].
// `src` / `dst`: a threadgroup or thread pointer, or a (bounds-checked) device pointer.
template <typename T, typename Pointer, int R, int C>
void simdgroup_load(simdgroup_matrix<T, R, C>& m, Pointer src, ulong elements_per_row = 8,
                    vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false) {
  const uint lane = kvcheck::metal::CurrentThread().thread_index_in_simdgroup;
  const long r = SimdMatrixRow(lane), c = SimdMatrixCol(lane);
  for (int t = 0; t < 2; ++t) {
    const long row = transpose ? c + t : r, col = transpose ? r : c + t;
    m.elements[t] = T(src[(long(origin.y) + row) * long(elements_per_row) + long(origin.x) + col]);
  }
}

template <typename T, typename Pointer, int R, int C>
void simdgroup_store(const simdgroup_matrix<T, R, C>& m, Pointer dst, ulong elements_per_row = 8,
                     vec<ulong, 2> origin = vec<ulong, 2>(0), bool transpose = false) {
  const uint lane = kvcheck::metal::CurrentThread().thread_index_in_simdgroup;
  const long r = SimdMatrixRow(lane), c = SimdMatrixCol(lane);
  for (int t = 0; t < 2; ++t) {
    const long row = transpose ? c + t : r, col = transpose ? r : c + t;
    auto& element = dst[(long(origin.y) + row) * long(elements_per_row) + long(origin.x) + col];
    element = std::remove_reference_t<decltype(element)>(m.elements[t]);
  }
}

template <typename T, typename A, typename B, typename C>
void simdgroup_multiply_accumulate(simdgroup_matrix<T, 8, 8>& d,
                                   const simdgroup_matrix<A, 8, 8>& a,
                                   const simdgroup_matrix<B, 8, 8>& b,
                                   const simdgroup_matrix<C, 8, 8>& c,
                                   kvcheck::metal::CallSite where = {}) {
  const float ea[2] = {float(a.elements.x), float(a.elements.y)};
  const float eb[2] = {float(b.elements.x), float(b.elements.y)};
  const float ec[2] = {float(c.elements.x), float(c.elements.y)};
  float ed[2];
  kvcheck::metal::SimdMatrixMultiplyAccumulate(ea, eb, ec, ed, where);
  d.elements = vec<T, 2>(T(ed[0]), T(ed[1]));
}

template <typename T, typename A, typename B>
void simdgroup_multiply(simdgroup_matrix<T, 8, 8>& d, const simdgroup_matrix<A, 8, 8>& a,
                        const simdgroup_matrix<B, 8, 8>& b, kvcheck::metal::CallSite where = {}) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, 8, 8>(T(0)), where);
}

}  // namespace metal

// ---- Thread attributes (default arguments the translator writes) ------------------------------

namespace kvcheck::msl::builtin {

// Converts to whichever integer or vector type the parameter declares.
struct AnyIds {
  metal::Dim3 v;
  operator uint32_t() const { return v.x; }
  operator uint16_t() const { return static_cast<uint16_t>(v.x); }
  operator int32_t() const { return static_cast<int32_t>(v.x); }
  operator ::metal::uint2() const { return {v.x, v.y}; }
  operator ::metal::uint3() const { return {v.x, v.y, v.z}; }
  operator ::metal::ushort2() const {
    return {static_cast<uint16_t>(v.x), static_cast<uint16_t>(v.y)};
  }
  operator ::metal::ushort3() const {
    return {static_cast<uint16_t>(v.x), static_cast<uint16_t>(v.y), static_cast<uint16_t>(v.z)};
  }
};

inline AnyIds Scalar(uint32_t x) { return {{x, 0, 0}}; }
inline const metal::ThreadIds& Ids() { return metal::CurrentThread(); }
inline AnyIds thread_position_in_grid() { return {Ids().thread_position_in_grid}; }
inline AnyIds threadgroup_position_in_grid() { return {Ids().threadgroup_position_in_grid}; }
inline AnyIds thread_position_in_threadgroup() { return {Ids().thread_position_in_threadgroup}; }
inline AnyIds threads_per_threadgroup() { return {Ids().threads_per_threadgroup}; }
inline AnyIds threadgroups_per_grid() { return {Ids().threadgroups_per_grid}; }
inline AnyIds threads_per_grid() {
  const metal::ThreadIds& i = Ids();
  return {{i.threadgroups_per_grid.x * i.threads_per_threadgroup.x,
           i.threadgroups_per_grid.y * i.threads_per_threadgroup.y,
           i.threadgroups_per_grid.z * i.threads_per_threadgroup.z}};
}
inline AnyIds thread_index_in_threadgroup() { return Scalar(Ids().thread_index_in_threadgroup); }
inline AnyIds simdgroup_index_in_threadgroup() {
  return Scalar(Ids().simdgroup_index_in_threadgroup);
}
inline AnyIds thread_index_in_simdgroup() { return Scalar(Ids().thread_index_in_simdgroup); }
inline AnyIds threads_per_simdgroup() { return Scalar(Ids().threads_per_simdgroup); }
inline AnyIds thread_execution_width() { return Scalar(Ids().threads_per_simdgroup); }
inline AnyIds simdgroups_per_threadgroup() { return Scalar(Ids().simdgroups_per_threadgroup); }

}  // namespace kvcheck::msl::builtin

using namespace metal;  // NOLINT: MSL sources say `using namespace metal;` themselves, too

#endif  // KVCHECK_SRC_METAL_MSL_CPU_METAL_STDLIB_H_
