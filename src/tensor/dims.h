// File: dims.h
// Dims: the shape or strides of a tensor, one int64_t per dimension, outermost first, in a
// fixed inline array of kMaxRank entries.
//
// Views are made on every cache append and attention call, so a Layout must copy cheaply:
// Dims is trivially copyable (no heap, no loop). Ranks above kMaxRank are rejected by the
// Layout factories with an error; constructing a larger Dims directly is a broken invariant.
#ifndef KVCHECK_SRC_TENSOR_DIMS_H_
#define KVCHECK_SRC_TENSOR_DIMS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "src/base/check.h"

namespace kvcheck {

inline constexpr int kMaxRank = 8;

class Dims {
 public:
  using value_type = int64_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using size_type = size_t;

  Dims() = default;
  Dims(std::initializer_list<int64_t> values) : Dims(values.begin(), values.end()) {}
  explicit Dims(size_t count, int64_t value = 0) {
    KV_CHECK(count <= kMaxRank);
    size_ = static_cast<uint8_t>(count);
    for (size_t i = 0; i < count; ++i) values_[i] = value;
  }
  template <typename Iterator>
    requires(!std::is_integral_v<Iterator>)
  Dims(Iterator first, Iterator last) {
    for (; first != last; ++first) push_back(*first);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t& operator[](size_t i) { return values_[i]; }
  int64_t operator[](size_t i) const { return values_[i]; }
  int64_t& back() { return values_[size_ - 1]; }
  int64_t back() const { return values_[size_ - 1]; }
  void push_back(int64_t value) {
    KV_CHECK(size_ < kMaxRank);
    values_[size_++] = value;
  }
  void pop_back() { --size_; }
  int64_t* data() { return values_.data(); }
  const int64_t* data() const { return values_.data(); }
  iterator begin() { return values_.data(); }
  iterator end() { return values_.data() + size_; }
  const_iterator begin() const { return values_.data(); }
  const_iterator end() const { return values_.data() + size_; }

  friend bool operator==(const Dims& a, const Dims& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (a.values_[i] != b.values_[i]) return false;
    }
    return true;
  }

 private:
  std::array<int64_t, kMaxRank> values_{};
  uint8_t size_ = 0;
};

}  // namespace kvcheck

#endif  // KVCHECK_SRC_TENSOR_DIMS_H_
