// File: msl_runtime.h
// What translated .metal code calls (msl_translate.cc) and what the host calls to run it:
// the kernel registry, the dispatch description (kernel name, function constants, grid,
// threadgroup size, buffers with byte offsets), and the bindings a kernel's parameters read
// as default arguments (buffers, thread attributes, function constants, threadgroup memory).
#ifndef KVCHECK_SRC_METAL_MSL_CPU_MSL_RUNTIME_H_
#define KVCHECK_SRC_METAL_MSL_CPU_MSL_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "src/metal/msl_cpu/device_pointer.h"
#include "src/metal/msl_cpu/simt_executor.h"

namespace kvcheck::msl {

// ---- The host side ------------------------------------------------------------------------

// One buffer argument: `data` is the start of the allocation and `offset` the byte offset of
// the binding in it (Metal's setBuffer:offset:), `bytes` the allocation's size.
struct BufferArgument {
  void* data = nullptr;
  size_t bytes = 0;
  size_t offset = 0;
};

// A function constant's value (bool, int or float constants).
struct ConstantValue {
  enum class Kind { kBool, kInt, kFloat } kind = Kind::kInt;
  int64_t integer = 0;
  double real = 0;
  static ConstantValue Bool(bool b) { return {Kind::kBool, b ? 1 : 0, 0}; }
  static ConstantValue Int(int64_t i) { return {Kind::kInt, i, 0}; }
  static ConstantValue Float(double f) { return {Kind::kFloat, 0, f}; }
};

struct DispatchDescription {
  std::string kernel;  // the registered name ([[host_name]] or the function's name)
  std::map<int, ConstantValue> constants;  // by [[function_constant(index)]]
  metal::Dim3 threadgroups;
  metal::Dim3 threads_per_threadgroup;
  std::map<int, BufferArgument> buffers;           // by [[buffer(index)]]
  std::map<int, size_t> threadgroup_arguments;     // bytes, by [[threadgroup(index)]]
  bool uniform_simd = true;
};

// Runs the kernel. Errors: kNotFound for an unregistered kernel; RunDispatch's, among them a
// read of an unbound buffer or an undefined function constant (kFailedPrecondition, naming
// the thread).
absl::Status Dispatch(const DispatchDescription& description);

// The registered kernel names, sorted.
std::vector<std::string> RegisteredKernels();

// ---- What translated code uses -------------------------------------------------------------

class KernelRegistration {
 public:
  KernelRegistration(const char* name, void (*run)());
};

// A pointer (or reference) of whatever type the parameter declares: a bounds-checked
// DevicePtr for a `device T*` buffer parameter or a `threadgroup T*` one (its length set by
// the dispatch), a reference for `constant T&` (checked to fit in the buffer).
struct AnyPointer {
  void* pointer;
  BufferBounds bounds;  // index -1: not a buffer
  template <typename T>
  operator DevicePtr<T>() const {
    return DevicePtr<T>(static_cast<T*>(pointer), bounds);
  }
  template <typename T>
  operator T*() const {
    return static_cast<T*>(pointer);
  }
  template <typename T>
  operator T&() const {
    if (bounds.index >= 0) {
      // The object must fit between the binding's start and its allocation's end, and start
      // on its alignment (a misaligned reference is undefined, in C++ as on a GPU).
      if (static_cast<int64_t>(sizeof(T)) > bounds.last) ThrowOutOfBounds(bounds, 0, sizeof(T));
      const size_t remainder = reinterpret_cast<uintptr_t>(pointer) % alignof(T);
      if (remainder != 0) ThrowMisaligned(bounds, remainder, alignof(T));
    }
    return *static_cast<T*>(pointer);
  }
};

AnyPointer Buffer(int index);
AnyPointer ThreadgroupArgument(int index);

// The value of a function constant in the current dispatch, converted to T.
ConstantValue FunctionConstantValue(int index, const char* name);
bool FunctionConstantDefined(int index);
template <typename T>
T FunctionConstant(int index, const char* name) {
  const ConstantValue v = FunctionConstantValue(index, name);
  return v.kind == ConstantValue::Kind::kFloat ? static_cast<T>(v.real)
                                               : static_cast<T>(v.integer);
}

// The threadgroup's block for a `threadgroup T name[...]` declaration (site: an address unique
// to the declaration).
template <typename T>
T& Shared(const void* site) {
  return *static_cast<T*>(metal::ThreadgroupMemory(site, sizeof(T), alignof(T)));
}

}  // namespace kvcheck::msl

#endif  // KVCHECK_SRC_METAL_MSL_CPU_MSL_RUNTIME_H_
