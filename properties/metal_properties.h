// File: metal_properties.h
// The Metal kernels (src/metal/kernels/*.metal, run by the SIMT emulator) against the
// reference, with their own budget: the emulator runs every GPU thread as a fiber (a decode
// row of sdpa_vector is 1,024 of them), so its cases stay at decode and short-prefill sizes
// (at most 96 query rows of B x H x Sq, 320 keys). The kernels are also in the kernel
// registry, where the shared laws give them the calls within their budget (within_budget).
//   - attention/metal_vector_vs_reference, attention/metal_2pass_vs_reference (the two-pass
//     kernel: 32 key blocks merged by a second dispatch), attention/metal_tiled_vs_reference
//     (32 x 16 tiles, simdgroup_matrix products): every element within the derived bound, the
//     whole contract (masks, causal and window by positions, softcap, ALiBi, GQA, strided
//     views, special values), f32 / f16 / bf16, head dims 1..256;
//   - no emulator error (barrier divergence, threadgroup budget, a buffer read out of bounds)
//     on any valid input: such an error fails the case with the emulator's report;
//   - attention/metal_head_dim_limit: a row longer than the kernels' 256 dims is refused by
//     each kernel and the dispatcher, naming the head dim.
#ifndef KVCHECK_PROPERTIES_METAL_PROPERTIES_H_
#define KVCHECK_PROPERTIES_METAL_PROPERTIES_H_

#include <string>
#include <vector>

#include "properties/attention_properties.h"
#include "properties/property_runner.h"

namespace kvcheck::properties {

// The laws above, and those between the Metal kernels (each also within the bound of the reference):
//   - attention/metal_vector_equals_2pass_at_the_threshold: decode at Skv 1023, 1024, 1025
//     (kTwoPassMinKeys - 1 .. + 1), vector and 2-pass within twice the bound of each other,
//     and the dispatcher bit for bit equal to the kernel its threshold picks;
//   - attention/metal_tiled_one_row_equals_vector: the tiled kernel on Sq = 1;
//   - attention/metal_equals_cpu_flash: the dispatcher and CPU flash.
std::vector<PropertySpec> MetalProperties();

// "attention/<name>/vs_reference" on the Metal cases above, for a kernel of the same interface
// (the Metal defect models: defects/defective_metal.h).
PropertySpec MetalKernelLawProperty(const std::string& name, KernelFn kernel, int cases);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_METAL_PROPERTIES_H_
