// File: kernel_registry.h
// The attention-kernel registry: every attention kernel of the engine by name, the way the
// cache registry (src/cache/registry.h) lists the strategies. The kernel laws, the cache state
// machine's Attend command, the decoders, the generation laws, the fuzzers and kvcheck iterate
// this table, so a new kernel (or a variant of one: a path, a split count) is one line in
// kernel_registry.cc and gets every check.
//
// Every kernel honours the contract of attention_params.h within the bound of
// reference/ERROR_BOUND.md; `num_threads` may change rounding (split counts) but never the
// contract.
#ifndef KVCHECK_SRC_ATTENTION_KERNEL_REGISTRY_H_
#define KVCHECK_SRC_ATTENTION_KERNEL_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

// A function object, so that a kernel of an external engine (src/engine/) can carry its
// connection.
using AttentionKernelFn = std::function<absl::StatusOr<Tensor>(
    const Tensor& q, const Tensor& k, const Tensor& v, const AttentionParams& params,
    int num_threads)>;

// The parts of the contract a kernel implements (bits of AttentionKernel::features). Every
// built-in kernel implements all of them; a kernel of an external engine may declare fewer,
// and the kernel laws then generate only calls that use what it declares.
enum KernelFeature : uint32_t {
  kFeatureScale = 1u << 0,      // a custom scale (otherwise 1/sqrt(D))
  kFeatureSoftcap = 1u << 1,    // softcap > 0
  kFeatureAlibi = 1u << 2,      // ALiBi slopes
  kFeatureCausal = 1u << 3,     // causal
  kFeatureWindow = 1u << 4,     // a sliding window W > 0
  kFeatureMask = 1u << 5,       // an additive mask
  kFeaturePositions = 1u << 6,  // explicit q / kv positions, empty (negative) slots included
  kFeatureGqa = 1u << 7,        // H != KH
  kAllKernelFeatures = (1u << 8) - 1,
};

struct AttentionKernel {
  const char* name;     // "naive", "flash", "flash/scalar", ...
  const char* summary;  // one line for listings
  // Errors: those of the kernel (attention_params.h). REQUIRES: 1 <= num_threads <= 256.
  AttentionKernelFn run;
  // num_threads changes how the work is divided (the laws run it with 1 and 2 threads).
  bool threaded;
  uint32_t features = kAllKernelFeatures;  // KernelFeature bits
  uint32_t dtypes = 0x7;                   // bit DType: f32 = 1, f16 = 2, bf16 = 4
  // nullptr: any size. A kernel run by an emulator (the Metal kernels on the SIMT emulator,
  // one to five microseconds per query row and key, thousands of times CPU flash) says which
  // calls fit its budget (q (B, H, Sq, D), k (B, KH, Skv, D)). Laws that generate calls for
  // several kernels skip it on the others (the kernel table's case counts show how many it
  // got); its own laws size their cases to fit.
  bool (*within_budget)(const Tensor& q, const Tensor& k) = nullptr;
  // True for a kernel that a dispatcher of the registry picks by shape (metal_vector,
  // metal_2pass, metal_tiled: the `metal` dispatcher). The kernel laws run it on its own; what
  // runs a model or a cache (the decoders' tests, the generation laws, the cache state
  // machine's Attend, the built-in engine's table) runs the dispatcher instead, which reaches
  // it on the shapes it is picked for: the emulator's time goes once, not four times.
  bool behind_dispatcher = false;
  bool supports(DType dtype) const { return (dtypes >> static_cast<int>(dtype)) & 1; }
  bool emulated() const { return within_budget != nullptr; }
  // Whether a call with these shapes fits the kernel's budget (always, unless emulated).
  bool admits(const Tensor& q, const Tensor& k) const;
};

// Every registered (built-in) kernel, in a fixed order: the CPU ones, then the Metal ones
// (src/metal/: metal_vector, metal_2pass, metal_tiled and the dispatcher, metal).
absl::Span<const AttentionKernel> AttentionKernels();
// nullptr if there is none of that name.
const AttentionKernel* FindAttentionKernel(const std::string& name);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_ATTENTION_KERNEL_REGISTRY_H_
