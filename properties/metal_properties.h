// File: metal_properties.h
// The Metal kernels (src/metal/kernels/*.metal, run by the SIMT emulator) against the
// reference, with their own budget: the emulator runs every GPU thread as a fiber (a decode
// row of sdpa_vector is 1,024 of them), so its cases stay at decode and short-prefill sizes
// (at most 96 query rows of B x H x Sq, 320 keys) until the emulator is fast enough to join
// the kernel registry's laws.
//   - attention/metal_vector_vs_reference, attention/metal_2pass_vs_reference (the two-pass
//     kernel: 32 key blocks merged by a second dispatch): every element within the derived
//     bound, the whole contract (masks, causal and window by positions, softcap, ALiBi, GQA,
//     strided views, special values), f32 / f16 / bf16, head dims 1..256;
//   - no emulator error (barrier divergence, threadgroup budget, unbound buffer) on any
//     valid input: such an error fails the case with the emulator's report.
#ifndef KVCHECK_PROPERTIES_METAL_PROPERTIES_H_
#define KVCHECK_PROPERTIES_METAL_PROPERTIES_H_

#include <vector>

#include "properties/property_runner.h"

namespace kvcheck::properties {

std::vector<PropertySpec> MetalProperties();

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_METAL_PROPERTIES_H_
