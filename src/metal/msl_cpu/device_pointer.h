// File: device_pointer.h
// What a kernel's `device T*` becomes in the emulator (msl_translate writes DevicePtr<T> for
// it, and for a `threadgroup T*` parameter bound with [[threadgroup(n)]], whose length the
// host sets): a pointer that knows the binding it came from and checks every access against
// the binding's allocation, so that an out-of-bounds read or write is an error of the dispatch
// (a std::out_of_range the executor reports with the kernel, threadgroup and thread) instead of
// a read of whatever lies next to the buffer, on a GPU and here alike. Reads past a view but
// inside its allocation are not errors (the GPU cannot tell either): the poisoned unused
// capacity of the caches shows them as NaN instead.
//
// The position is kept as an element index from the binding's start, never as a pointer
// outside the allocation (forming one would itself be undefined behaviour in C++). A DevicePtr
// made from a raw pointer (an address a kernel took with &x[i], say) is not checked.
#ifndef KVCHECK_SRC_METAL_MSL_CPU_DEVICE_POINTER_H_
#define KVCHECK_SRC_METAL_MSL_CPU_DEVICE_POINTER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace kvcheck::msl {

// The bounds of one buffer binding: bytes [first, last) of the allocation relative to the
// binding's start (first <= 0: the binding may start inside the allocation), and its index.
struct BufferBounds {
  int64_t first = 0;
  int64_t last = 0;
  int index = -1;            // -1: unchecked
  bool threadgroup = false;  // [[threadgroup(index)]] memory, not [[buffer(index)]]
};

// Throws std::out_of_range naming the buffer, the element and the allocation.
[[noreturn]] void ThrowOutOfBounds(const BufferBounds& bounds, int64_t byte, size_t size);
// Throws std::out_of_range naming the buffer whose binding starts `remainder` bytes past an
// `alignment`-byte boundary.
[[noreturn]] void ThrowMisaligned(const BufferBounds& bounds, size_t remainder, size_t alignment);

template <typename T>
class DevicePtr {
 public:
  DevicePtr() = default;
  DevicePtr(std::nullptr_t) {}  // NOLINT: MSL's `(device T*)nullptr`
  // Unchecked, from an address.
  DevicePtr(T* raw) : base_(raw) {}  // NOLINT: `&x[i]` passed on as a device pointer
  DevicePtr(T* base, const BufferBounds& bounds) : base_(base), bounds_(bounds) {}
  // device T* -> const device T*.
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*> &&
                                                    sizeof(U) == sizeof(T)>>
  DevicePtr(const DevicePtr<U>& other)  // NOLINT: as the pointer conversion
      : base_(other.base_), index_(other.index_), bounds_(other.bounds_) {}

  T& operator[](int64_t i) const { return *At(index_ + i); }
  T& operator*() const { return *At(index_); }
  T* operator->() const { return At(index_); }

  DevicePtr operator+(int64_t n) const { return Moved(n); }
  DevicePtr operator-(int64_t n) const { return Moved(-n); }
  friend DevicePtr operator+(int64_t n, const DevicePtr& p) { return p.Moved(n); }
  DevicePtr& operator+=(int64_t n) { return *this = Moved(n); }
  DevicePtr& operator-=(int64_t n) { return *this = Moved(-n); }
  DevicePtr& operator++() { return *this = Moved(1); }
  DevicePtr& operator--() { return *this = Moved(-1); }
  DevicePtr operator++(int) {
    DevicePtr before = *this;
    *this = Moved(1);
    return before;
  }
  int64_t operator-(const DevicePtr& other) const { return index_ - other.index_; }

  explicit operator bool() const { return base_ != nullptr; }
  bool operator==(std::nullptr_t) const { return base_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return base_ != nullptr; }
  bool operator==(const DevicePtr& o) const { return base_ == o.base_ && index_ == o.index_; }
  bool operator!=(const DevicePtr& o) const { return !(*this == o); }

 private:
  template <typename U>
  friend class DevicePtr;

  DevicePtr Moved(int64_t n) const {
    DevicePtr moved = *this;
    moved.index_ += n;
    return moved;
  }

  // The element `i` elements from the binding's start, checked.
  T* At(int64_t i) const {
    const int64_t byte = i * static_cast<int64_t>(sizeof(T));
    if (bounds_.index >= 0) {
      if (byte < bounds_.first || byte + static_cast<int64_t>(sizeof(T)) > bounds_.last) {
        ThrowOutOfBounds(bounds_, byte, sizeof(T));
      }
      // A binding offset that is not a multiple of the element's alignment (Metal requires
      // it to be): every access through it is misaligned, undefined on a GPU and in C++.
      if (reinterpret_cast<uintptr_t>(base_) % alignof(T) != 0) {
        ThrowMisaligned(bounds_, reinterpret_cast<uintptr_t>(base_) % alignof(T), alignof(T));
      }
    }
    return base_ + i;
  }

  T* base_ = nullptr;
  int64_t index_ = 0;
  BufferBounds bounds_;
};

}  // namespace kvcheck::msl

#endif  // KVCHECK_SRC_METAL_MSL_CPU_DEVICE_POINTER_H_
