// attention: bytes -> one attention call (shapes, GQA, decode or prefill, causal / window /
// additive mask, ALiBi, softcap, scale, default / ring / varlen positions, strided inputs,
// f32 / f16 / bf16, values with NaN, infinities, subnormals and huge magnitudes), run through
// one registered attention kernel (src/attention/kernel_registry.h, chosen by the input) and
// the naive matmul+softmax kernel, each compared with the reference (the double-double
// oracle) within its per-element bound (reference/attention_bound.h) on one row the input
// chooses. Any violation aborts with the case.
//
// Built with KVCHECK_FUZZ_METAL (//fuzz:metal_attention_fuzzer) it picks among the emulated
// kernels instead (metal_vector, metal_2pass, metal_tiled, metal: the .metal kernels on the
// SIMT emulator, src/metal/): a GPU-rule violation (divergent barrier, device buffer read out
// of bounds, threadgroup budget) is a kernel failure like any other. Without it, the
// emulated kernels stay out (a few hundred times slower per input).
//
// The decoding is attention_decoding.cc. Shapes are mostly small (Skv <= 40, D <= 33);
// now and then a head size or key count is one of the property generators' boundary values
// (attention_boundaries.h: D up to 256, Skv up to 600), with the other sizes kept small. One
// reference row per input: the target runs a few thousand inputs per second on one core.
//
// KVCHECK_FUZZ_DEFECT=<attention defect> checks that defect's kernel instead.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/attention_decoding.h"
#include "fuzz/draws.h"
#include "fuzz/engine_under_fuzz.h"
#include "fuzz/fuzz_support.h"
#include "properties/kernel_case.h"
#include "reference/attention_comparison.h"
#include "reference/reference_attention.h"
#include "src/attention/kernel_registry.h"

namespace kvcheck::fuzz {
namespace {

#ifdef KVCHECK_FUZZ_METAL
constexpr char kTarget[] = "metal_attention";
constexpr bool kEmulatedKernels = true;
#else
constexpr char kTarget[] = "attention";
constexpr bool kEmulatedKernels = false;
#endif

using properties::KernelCase;
using reference::AttentionProblem;

struct Kernel {
  std::string name;
  std::function<absl::StatusOr<Tensor>(const properties::KernelInputs& in)> run;
};

// The registered kernels an input picks from (src/attention/kernel_registry.h): an engine's,
// or kvcheck's own CPU kernels (the emulated Metal ones under KVCHECK_FUZZ_METAL). One, the
// defect's, when a defect is fuzzed.
std::vector<const AttentionKernel*> KernelChoices(const FuzzedEngine* engine) {
  std::vector<const AttentionKernel*> kernels;
  if (DefectUnderFuzz(defects::DefectKind::kAttention) != nullptr) return {nullptr};
  if (engine != nullptr) {
    for (const AttentionKernel& kernel : engine->kernels) kernels.push_back(&kernel);
  } else {
    for (const AttentionKernel& kernel : AttentionKernels()) {
      if (kernel.emulated() == kEmulatedKernels) kernels.push_back(&kernel);
    }
  }
  return kernels;
}

// The kernels one input runs: the defect's kernel, or the registered kernel the input picked
// and naive, the plainest one.
std::vector<Kernel> KernelsUnderFuzz(const FuzzedEngine* engine, const AttentionKernel* picked) {
  if (const defects::Defect* defect = DefectUnderFuzz(defects::DefectKind::kAttention)) {
    return {{defect->name, [defect](const properties::KernelInputs& in) {
               return defect->kernel(in.q, in.k, in.v, in.params);
             }}};
  }
  auto runner = [](const AttentionKernel& kernel) {
    return [&kernel](const properties::KernelInputs& in) {
      return kernel.run(in.q, in.k, in.v, in.params, 1);
    };
  };
  std::vector<Kernel> chosen = {{picked->name, runner(*picked)}};
  if (engine == nullptr && std::string(picked->name) != "naive") {
    chosen.push_back({"naive", runner(*FindAttentionKernel("naive"))});
  }
  return chosen;
}

int FuzzOne(const uint8_t* data, size_t size) {
  const FuzzedEngine* engine = EngineUnderFuzz();
  static const std::vector<const AttentionKernel*> choices = KernelChoices(engine);
  InputDraws in(data, size);
  const AttentionInput input = DecodeAttentionInput(in, choices.size());
  const KernelCase& c = input.kernel_case;
  const std::vector<Kernel> kernels = KernelsUnderFuzz(engine, choices[input.kernel]);
  const AttentionProblem& p = c.problem;
  Trace trace;
  std::ostringstream shown;
  properties::showValue(c, shown);
  trace.Add(shown.str());
  trace.Add("values: ", input.values, "; reference row ", absl::StrJoin(p.checked_rows, ","),
            "; kernels ", kernels[0].name, kernels.size() > 1 ? " and naive" : "");
  if (absl::Status valid = reference::ValidateAttentionProblem(p); !valid.ok()) {
    Fail(kTarget, trace, absl::StrCat("decoded an invalid problem: ", valid.ToString()));
  }
  const absl::StatusOr<properties::KernelInputs> inputs = properties::MakeKernelInputs(c);
  if (!inputs.ok()) Fail(kTarget, trace, "could not build the kernel inputs");
  const reference::ReferenceAttention exact = reference::ComputeReferenceAttention(p);
  for (const Kernel& kernel : kernels) {
    const absl::StatusOr<Tensor> out = kernel.run(*inputs);
    // An engine's kernel refuses calls with features or dtypes it did not declare
    // (engine_entries.h): such an input does not apply to it.
    if (!out.ok() && EngineUnderFuzz() != nullptr &&
        out.status().code() == absl::StatusCode::kUnimplemented) {
      return 0;
    }
    if (!out.ok()) {
      Fail(kTarget, trace, absl::StrCat(kernel.name, " failed: ", out.status().ToString()));
    }
    const reference::AttentionComparison comparison = reference::CompareAttention(
        out->ToFloats(), exact, {p.batch, p.num_heads, p.q_len, p.head_dim});
    if (!comparison.ok()) {
      Fail(kTarget, trace, absl::StrCat(kernel.name, ": ", comparison.first_violation));
    }
  }
  return 0;
}

}  // namespace
}  // namespace kvcheck::fuzz

// Resolves KVCHECK_FUZZ_DEFECT before the first input (an unknown name exits with the list).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kvcheck::fuzz::DefectUnderFuzz(kvcheck::defects::DefectKind::kAttention);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::FuzzOne(data, size);
}
