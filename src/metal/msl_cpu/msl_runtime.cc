// The kernel registry and the bindings of a dispatch (msl_runtime.h).
#include "src/metal/msl_cpu/msl_runtime.h"

#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace kvcheck::msl {
namespace {

std::map<std::string, void (*)()>& Registry() {
  static auto* registry = new std::map<std::string, void (*)()>;
  return *registry;
}

// The dispatch running on this OS thread (fibers of one dispatch share it), and its buffer
// bindings by index (every kernel parameter reads one per thread: no map lookup there).
thread_local const DispatchDescription* current = nullptr;
constexpr int kMaxBufferIndex = 30;  // Metal's argument table has 31 buffer slots
thread_local void* current_buffers[kMaxBufferIndex + 1] = {};
thread_local BufferBounds current_bounds[kMaxBufferIndex + 1] = {};

const DispatchDescription& Current(const char* what) {
  if (current == nullptr) {
    throw std::logic_error(absl::StrCat(what, " read outside a dispatch"));
  }
  return *current;
}

}  // namespace

void ThrowOutOfBounds(const BufferBounds& bounds, int64_t byte, size_t size) {
  if (bounds.threadgroup) {
    throw std::out_of_range(absl::StrCat("out-of-bounds threadgroup memory access: ", size,
                                         " bytes at byte ", byte, " of [[threadgroup(",
                                         bounds.index, ")]], whose length the dispatch set to ",
                                         bounds.last, " bytes"));
  }
  throw std::out_of_range(absl::StrCat(
      "out-of-bounds device memory access: ", size, " bytes at byte ", byte,
      " from the start of [[buffer(", bounds.index, ")]], whose allocation spans bytes [",
      bounds.first, ", ", bounds.last, ") from there"));
}

void ThrowMisaligned(const BufferBounds& bounds, size_t remainder, size_t alignment) {
  throw std::out_of_range(absl::StrCat(
      "misaligned device memory access: [[buffer(", bounds.index, ")]] is bound ", remainder,
      " bytes past a ", alignment, "-byte boundary (its offset must be a multiple of the "
      "element's alignment)"));
}

KernelRegistration::KernelRegistration(const char* name, void (*run)()) {
  Registry()[name] = run;
}

std::vector<std::string> RegisteredKernels() {
  std::vector<std::string> names;
  for (const auto& [name, run] : Registry()) names.push_back(name);
  return names;
}

absl::Status Dispatch(const DispatchDescription& description) {
  const auto it = Registry().find(description.kernel);
  if (it == Registry().end()) {
    return absl::NotFoundError(absl::StrCat("no Metal kernel named '", description.kernel,
                                            "' is registered"));
  }
  for (const auto& [index, buffer] : description.buffers) {
    if (buffer.offset > buffer.bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", description.kernel, "': buffer(", index, ") offset ", buffer.offset,
          " is past its ", buffer.bytes, " bytes"));
    }
  }
  metal::DispatchOptions options;
  options.kernel = description.kernel;
  options.threadgroups = description.threadgroups;
  options.threads_per_threadgroup = description.threads_per_threadgroup;
  options.uniform_simd = description.uniform_simd;
  if (current != nullptr) return absl::FailedPreconditionError("Dispatch inside a dispatch");
  for (void*& slot : current_buffers) slot = nullptr;
  for (const auto& [index, buffer] : description.buffers) {
    if (index < 0 || index > kMaxBufferIndex) {
      return absl::InvalidArgumentError(absl::StrCat("kernel '", description.kernel,
                                                     "': buffer index ", index, " (0..30)"));
    }
    current_buffers[index] = static_cast<char*>(buffer.data) + buffer.offset;
    current_bounds[index] = {-static_cast<int64_t>(buffer.offset),
                             static_cast<int64_t>(buffer.bytes - buffer.offset), index};
  }
  current = &description;
  void (*run)() = it->second;
  const absl::Status status = metal::RunDispatch(options, [run] { run(); });
  current = nullptr;
  return status;
}

AnyPointer Buffer(int index) {
  Current("buffer");
  if (index < 0 || index > kMaxBufferIndex || current_buffers[index] == nullptr) {
    throw std::out_of_range(absl::StrCat("[[buffer(", index, ")]] is not bound"));
  }
  return {current_buffers[index], current_bounds[index]};
}

AnyPointer ThreadgroupArgument(int index) {
  const DispatchDescription& d = Current("threadgroup argument");
  const auto it = d.threadgroup_arguments.find(index);
  if (it == d.threadgroup_arguments.end()) {
    throw std::out_of_range(absl::StrCat("[[threadgroup(", index, ")]] has no length set"));
  }
  // The map entry's address names the declaration: one block per index and threadgroup.
  // Accesses through it are checked against the length the dispatch set.
  return {metal::ThreadgroupMemory(&it->second, it->second, 16),
          {0, static_cast<int64_t>(it->second), index, /*threadgroup=*/true}};
}

ConstantValue FunctionConstantValue(int index, const char* name) {
  const DispatchDescription& d = Current("function constant");
  const auto it = d.constants.find(index);
  if (it == d.constants.end()) {
    throw std::out_of_range(absl::StrCat("function constant ", name, " (index ", index,
                                         ") is read but the dispatch does not define it"));
  }
  return it->second;
}

bool FunctionConstantDefined(int index) {
  return Current("function constant").constants.count(index) > 0;
}

}  // namespace kvcheck::msl
