// The Objective-C++ half of the Apple GPU host (metal_device_dispatch.h): the Metal API calls.
//
// Memory: compiled with ARC (objc_library compiles `srcs` with -fobjc-arc; the #error below
// keeps it so). The long-lived Metal objects are strong members of Impl and go with it; the
// temporaries of a call (command buffer, encoder, NSStrings, NSErrors) are autoreleased, and
// every entry point drains its own @autoreleasepool, because the C++ callers have none and a
// long run of dispatches would otherwise pile them up.
#include "src/metal/apple/metal_device_dispatch.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

#if !__has_feature(objc_arc)
#error "metal_device_dispatch.mm relies on ARC: compile it with -fobjc-arc"
#endif

namespace kvcheck::msl {
namespace {

// Metal's argument tables have 31 entries for buffers and 31 for threadgroup memory.
constexpr int kArgumentTableEntries = 31;
// setThreadgroupMemoryLength:atIndex: takes multiples of 16 bytes.
constexpr size_t kThreadgroupMemoryGranule = 16;
// Spare bytes after each staged allocation, so that a binding at the very end of its
// allocation (an empty view: offset == bytes) still lies inside its MTLBuffer.
constexpr size_t kSpareBytes = 16;

std::string Describe(NSError* error) {
  const char* text = error == nil ? nullptr : error.localizedDescription.UTF8String;
  return text != nullptr ? text : "(no description)";
}

// Nil for text that is not UTF-8.
NSString* ToNSString(const std::string& text) {
  return [[NSString alloc] initWithBytes:text.data()
                                  length:text.size()
                                encoding:NSUTF8StringEncoding];
}

MTLSize ToMTLSize(const metal::Dim3& size) { return MTLSizeMake(size.x, size.y, size.z); }

// A host allocation, or the union of overlapping ones, staged in one shared-storage MTLBuffer:
// bindings that alias on the host (two views of one tensor, one dummy bound twice) alias on the
// GPU too, and the copy back writes each host byte once, from the one copy the kernel saw.
struct StagedRegion {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  id<MTLBuffer> buffer = nil;
};

std::vector<StagedRegion> MergeAllocations(const std::map<int, BufferArgument>& buffers) {
  std::vector<StagedRegion> ranges;
  for (const auto& [index, buffer] : buffers) {
    const auto begin = reinterpret_cast<uintptr_t>(buffer.data);
    ranges.push_back({begin, begin + buffer.bytes, nil});
  }
  std::sort(ranges.begin(), ranges.end(), [](const StagedRegion& a, const StagedRegion& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::vector<StagedRegion> merged;
  for (const StagedRegion& range : ranges) {
    // Touching ranges stay apart: they are distinct allocations that merely lie side by side.
    if (!merged.empty() && range.begin < merged.back().end) {
      merged.back().end = std::max(merged.back().end, range.end);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

// The region that holds a binding's allocation (one does: the regions were made from them).
const StagedRegion& RegionOf(const std::vector<StagedRegion>& regions,
                             const BufferArgument& buffer) {
  const auto begin = reinterpret_cast<uintptr_t>(buffer.data);
  for (const StagedRegion& region : regions) {
    if (region.begin <= begin && begin + buffer.bytes <= region.end) return region;
  }
  return regions.front();  // unreachable
}

}  // namespace

struct AppleMetalDevice::Impl {
  id<MTLDevice> device = nil;
  id<MTLCommandQueue> queue = nil;
  id<MTLLibrary> library = nil;
  std::map<std::string, id<MTLComputePipelineState>> pipelines;  // by kernel and constants

  absl::Status OpenDefaultDevice();
  absl::Status Pipeline(const DispatchDescription& d,
                        id<MTLComputePipelineState> __strong* pipeline);
  absl::Status Run(const DispatchDescription& d);
};

absl::Status AppleMetalDevice::Impl::OpenDefaultDevice() {
  device = MTLCreateSystemDefaultDevice();
  if (device == nil) return absl::UnavailableError("this machine has no Metal GPU");
  queue = [device newCommandQueue];
  if (queue == nil) {
    return absl::UnavailableError("the Metal GPU gave no command queue");
  }
  return absl::OkStatus();
}

// The kernel specialized with the dispatch's function constants, made into a pipeline once per
// distinct (kernel, constants) and then taken from the cache.
absl::Status AppleMetalDevice::Impl::Pipeline(const DispatchDescription& d,
                                              id<MTLComputePipelineState> __strong* pipeline) {
  const std::string& kernel = d.kernel;
  MTLFunctionConstantValues* values = [[MTLFunctionConstantValues alloc] init];
  // The key holds each constant as Metal receives it (a float one by its float's bits).
  std::string key = kernel;
  for (const auto& [index, constant] : d.constants) {
    if (index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel '", kernel, "': function constant index ", index));
    }
    const auto at = static_cast<NSUInteger>(index);
    switch (constant.kind) {
      case ConstantValue::Kind::kBool: {
        const bool value = constant.integer != 0;
        [values setConstantValue:&value type:MTLDataTypeBool atIndex:at];
        absl::StrAppend(&key, "|b", index, "=", value ? 1 : 0);
        break;
      }
      case ConstantValue::Kind::kInt: {
        // MTLDataTypeInt is MSL's 32-bit int.
        if (constant.integer < std::numeric_limits<int32_t>::min() ||
            constant.integer > std::numeric_limits<int32_t>::max()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "kernel '", kernel, "': int function constant ", index, " = ", constant.integer,
              " does not fit MSL's 32-bit int"));
        }
        const auto value = static_cast<int32_t>(constant.integer);
        [values setConstantValue:&value type:MTLDataTypeInt atIndex:at];
        absl::StrAppend(&key, "|i", index, "=", value);
        break;
      }
      case ConstantValue::Kind::kFloat: {
        // A finite double past float's range has no float value (the conversion is undefined).
        if (std::isfinite(constant.real) &&
            std::fabs(constant.real) > std::numeric_limits<float>::max()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "kernel '", kernel, "': float function constant ", index, " = ", constant.real,
              " is out of float's range"));
        }
        const auto value = static_cast<float>(constant.real);
        uint32_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        [values setConstantValue:&value type:MTLDataTypeFloat atIndex:at];
        absl::StrAppend(&key, "|f", index, "=", bits);
        break;
      }
    }
  }
  if (const auto cached = pipelines.find(key); cached != pipelines.end()) {
    *pipeline = cached->second;
    return absl::OkStatus();
  }

  NSString* name = ToNSString(kernel);
  id<MTLFunction> function = name == nil ? nil : [library newFunctionWithName:name];
  if (function == nil) {
    return absl::NotFoundError(
        absl::StrCat("no Metal kernel named '", kernel, "' is in the library"));
  }
  NSError* error = nil;
  // A function that declares constants makes no pipeline until specialized, even when the
  // dispatch defines none (its constants may all be optional: is_function_constant_defined).
  // Constants given to a function that declares none are ignored, as the emulator does.
  if (function.functionConstantsDictionary.count > 0) {
    function = [library newFunctionWithName:name constantValues:values error:&error];
    if (function == nil) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", kernel, "': Metal rejected the function constants: ", Describe(error)));
    }
  }
  id<MTLComputePipelineState> made = [device newComputePipelineStateWithFunction:function
                                                                            error:&error];
  if (made == nil) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", kernel, "': Metal made no compute pipeline: ", Describe(error)));
  }
  pipelines.emplace(key, made);
  *pipeline = made;
  return absl::OkStatus();
}

absl::Status AppleMetalDevice::Impl::Run(const DispatchDescription& d) {
  const std::string& kernel = d.kernel;
  id<MTLComputePipelineState> pipeline = nil;
  if (absl::Status status = Pipeline(d, &pipeline); !status.ok()) return status;

  // The threadgroup: within the pipeline's limit (which can be under the device's 1,024 for a
  // kernel that uses many registers) and the device's per-dimension limits.
  const metal::Dim3& group = d.threads_per_threadgroup;
  const MTLSize device_limit = device.maxThreadsPerThreadgroup;
  if (group.count() == 0 || group.count() > pipeline.maxTotalThreadsPerThreadgroup ||
      group.x > device_limit.width || group.y > device_limit.height ||
      group.z > device_limit.depth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", kernel, "': ", group.x, "x", group.y, "x", group.z,
        " threads per threadgroup; its pipeline allows ", pipeline.maxTotalThreadsPerThreadgroup,
        " in all, the device ", device_limit.width, "x", device_limit.height, "x",
        device_limit.depth));
  }

  for (const auto& [index, buffer] : d.buffers) {
    if (index < 0 || index >= kArgumentTableEntries) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", kernel, "': buffer index ", index, " (0..", kArgumentTableEntries - 1, ")"));
    }
    if (buffer.data == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel '", kernel, "': buffer(", index, ") has no data"));
    }
    if (buffer.offset > buffer.bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", kernel, "': buffer(", index, ") offset ", buffer.offset,
          " is past its ", buffer.bytes, " bytes"));
    }
    // Room for the allocation (and the spare bytes) before the address space ends.
    const uintptr_t room =
        std::numeric_limits<uintptr_t>::max() - reinterpret_cast<uintptr_t>(buffer.data);
    if (room < kSpareBytes || buffer.bytes > room - kSpareBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", kernel, "': buffer(", index, ") of ", buffer.bytes,
          " bytes runs past the end of the address space"));
    }
  }

  // Threadgroup memory: the kernel's own declarations plus the threadgroup arguments, each
  // rounded up as Metal takes it.
  const NSUInteger memory_limit = device.maxThreadgroupMemoryLength;
  NSUInteger memory = pipeline.staticThreadgroupMemoryLength;
  for (const auto& [index, length] : d.threadgroup_arguments) {
    if (index < 0 || index >= kArgumentTableEntries) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel '", kernel, "': threadgroup argument index ", index, " (0..",
                       kArgumentTableEntries - 1, ")"));
    }
    if (length > memory_limit) {
      memory = memory_limit + 1;  // reported below; also keeps the sum from overflowing
      break;
    }
    memory += (length + kThreadgroupMemoryGranule - 1) / kThreadgroupMemoryGranule *
              kThreadgroupMemoryGranule;
  }
  if (memory > memory_limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", kernel, "': threadgroup memory over the device's ", memory_limit,
        " bytes (", pipeline.staticThreadgroupMemoryLength, " declared in the kernel)"));
  }

  // The emulator runs no threadgroup for an empty grid; Metal's validation rejects one.
  if (d.threadgroups.count() == 0) return absl::OkStatus();

  std::vector<StagedRegion> regions = MergeAllocations(d.buffers);
  for (StagedRegion& region : regions) {
    const size_t size = region.end - region.begin;
    region.buffer = [device newBufferWithLength:size + kSpareBytes
                                        options:MTLResourceStorageModeShared];
    if (region.buffer == nil) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "kernel '", kernel, "': Metal allocated no ", size, "-byte buffer (device limit ",
          device.maxBufferLength, ")"));
    }
    if (size > 0) {
      std::memcpy(region.buffer.contents, reinterpret_cast<const void*>(region.begin), size);
    }
  }

  id<MTLCommandBuffer> commands = [queue commandBuffer];
  id<MTLComputeCommandEncoder> encoder = [commands computeCommandEncoder];
  if (commands == nil || encoder == nil) {
    return absl::InternalError(
        absl::StrCat("kernel '", kernel, "': Metal gave no command buffer or encoder"));
  }
  [encoder setComputePipelineState:pipeline];
  for (const auto& [index, buffer] : d.buffers) {
    const StagedRegion& region = RegionOf(regions, buffer);
    const uintptr_t offset = reinterpret_cast<uintptr_t>(buffer.data) - region.begin +
                             buffer.offset;
    [encoder setBuffer:region.buffer offset:offset atIndex:static_cast<NSUInteger>(index)];
  }
  for (const auto& [index, length] : d.threadgroup_arguments) {
    const size_t rounded = (length + kThreadgroupMemoryGranule - 1) /
                           kThreadgroupMemoryGranule * kThreadgroupMemoryGranule;
    [encoder setThreadgroupMemoryLength:rounded atIndex:static_cast<NSUInteger>(index)];
  }
  [encoder dispatchThreadgroups:ToMTLSize(d.threadgroups)
          threadsPerThreadgroup:ToMTLSize(group)];
  [encoder endEncoding];
  [commands commit];
  [commands waitUntilCompleted];
  if (commands.status != MTLCommandBufferStatusCompleted) {
    return absl::InternalError(absl::StrCat("kernel '", kernel,
                                            "': the GPU command buffer failed: ",
                                            Describe(commands.error)));
  }

  for (const StagedRegion& region : regions) {
    const size_t size = region.end - region.begin;
    if (size > 0) {
      std::memcpy(reinterpret_cast<void*>(region.begin), region.buffer.contents, size);
    }
  }
  return absl::OkStatus();
}

AppleMetalDevice::AppleMetalDevice(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AppleMetalDevice::~AppleMetalDevice() = default;

absl::StatusOr<std::unique_ptr<AppleMetalDevice>> AppleMetalDevice::FromMetallib(
    const std::string& metallib_path) {
  @autoreleasepool {
    auto impl = std::make_unique<Impl>();
    if (absl::Status status = impl->OpenDefaultDevice(); !status.ok()) return status;
    NSString* path = ToNSString(metallib_path);
    if (path == nil) {
      return absl::InvalidArgumentError(
          absl::StrCat("metallib path '", metallib_path, "' is not UTF-8"));
    }
    NSError* error = nil;
    impl->library = [impl->device newLibraryWithURL:[NSURL fileURLWithPath:path] error:&error];
    if (impl->library == nil) {
      return absl::InvalidArgumentError(absl::StrCat("Metal could not load '", metallib_path,
                                                     "': ", Describe(error)));
    }
    return std::unique_ptr<AppleMetalDevice>(new AppleMetalDevice(std::move(impl)));
  }
}

absl::StatusOr<std::unique_ptr<AppleMetalDevice>> AppleMetalDevice::FromSource(
    const std::string& msl_source) {
  @autoreleasepool {
    auto impl = std::make_unique<Impl>();
    if (absl::Status status = impl->OpenDefaultDevice(); !status.ok()) return status;
    NSString* source = ToNSString(msl_source);
    if (source == nil) return absl::InvalidArgumentError("the Metal source is not UTF-8");
    MTLCompileOptions* options = [[MTLCompileOptions alloc] init];
    // Fast math off: the kernels test isnan and compare with -infinity (sdpa_common.h), which
    // fast math may fold away. The language version stays the newest the OS has (bfloat
    // needs MSL 3.1, macOS 14). fastMathEnabled is deprecated from the macOS 15 SDK in favour
    // of mathMode, which older SDKs lack.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    options.fastMathEnabled = NO;
#pragma clang diagnostic pop
    NSError* error = nil;
    impl->library = [impl->device newLibraryWithSource:source options:options error:&error];
    if (impl->library == nil) {
      return absl::InvalidArgumentError(
          absl::StrCat("Metal could not compile the source: ", Describe(error)));
    }
    return std::unique_ptr<AppleMetalDevice>(new AppleMetalDevice(std::move(impl)));
  }
}

absl::Status AppleMetalDevice::Dispatch(const DispatchDescription& description) {
  std::lock_guard<std::mutex> lock(dispatch_mutex_);
  @autoreleasepool {
    return impl_->Run(description);
  }
}

std::string AppleMetalDevice::DeviceName() const {
  @autoreleasepool {
    const char* name = impl_->device.name.UTF8String;
    return name != nullptr ? name : "";
  }
}

}  // namespace kvcheck::msl
