// File: metal_device_dispatch.h
// The Apple GPU host of the Metal kernels: runs a DispatchDescription (msl_runtime.h), the one
// the SIMT emulator's msl::Dispatch runs, on the Mac's GPU through the Metal framework. Plain
// C++ (the Objective-C++ is in metal_device_dispatch.mm, behind a PIMPL) so that host code in
// .cc files can include it. Builds on macOS only (BUILD.bazel, README.md).
#ifndef KVCHECK_SRC_METAL_APPLE_METAL_DEVICE_DISPATCH_H_
#define KVCHECK_SRC_METAL_APPLE_METAL_DEVICE_DISPATCH_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/metal/msl_cpu/msl_runtime.h"

namespace kvcheck::msl {

// The system's default GPU with one library of compiled kernels. Dispatches run one at a time
// (a mutex): each waits for the GPU to finish before it returns.
class AppleMetalDevice {
 public:
  // With the kernels of a .metallib, built from src/metal/kernels/*.metal by xcrun (README.md).
  // Errors: kUnavailable without a Metal GPU; kInvalidArgument for a library Metal rejects.
  static absl::StatusOr<std::unique_ptr<AppleMetalDevice>> FromMetallib(
      const std::string& metallib_path);

  // With kernels compiled at run time from MSL source text (newLibraryWithSource). The text
  // must be self-contained: Metal's run-time compiler has no include path, so the caller
  // pastes the project headers (sdpa_params.h, sdpa_common.h) in place of their #includes.
  // Fast math is off, as in the xcrun commands of README.md. Errors: as FromMetallib, with
  // the compiler's messages.
  static absl::StatusOr<std::unique_ptr<AppleMetalDevice>> FromSource(
      const std::string& msl_source);

  ~AppleMetalDevice();
  AppleMetalDevice(const AppleMetalDevice&) = delete;
  AppleMetalDevice& operator=(const AppleMetalDevice&) = delete;

  // Runs the dispatch as msl::Dispatch does on the emulator: specializes the kernel with the
  // function constants (the pipeline is cached by kernel and constants), stages each buffer's
  // whole allocation in GPU-visible memory and binds it at its byte offset, sets the
  // threadgroup arguments' lengths, runs the grid, waits, and copies every buffer back (the
  // description does not say which ones the kernel writes). Bindings whose host allocations
  // overlap share one GPU buffer, so aliasing on the host is aliasing on the GPU.
  // `uniform_simd` is an emulator option and is ignored: the GPU's simdgroups are what they are.
  // Errors name the kernel: kNotFound for a kernel missing from the library; kInvalidArgument
  // for constants or a pipeline Metal rejects, a bad binding, a threadgroup over the pipeline's
  // maxTotalThreadsPerThreadgroup or over the threadgroup memory limit; kResourceExhausted for
  // a buffer Metal cannot allocate; kInternal for a command buffer that failed (host buffers
  // are then left as they were).
  absl::Status Dispatch(const DispatchDescription& description);

  // The GPU's name (e.g. "Apple M2"), for reports.
  std::string DeviceName() const;

 private:
  struct Impl;  // the Metal objects (metal_device_dispatch.mm)
  explicit AppleMetalDevice(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::mutex dispatch_mutex_;  // Dispatch fills the pipeline cache and uses one queue
};

}  // namespace kvcheck::msl

#endif  // KVCHECK_SRC_METAL_APPLE_METAL_DEVICE_DISPATCH_H_
