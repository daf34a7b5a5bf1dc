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
// Shapes stay small (Skv <= 40, D <= 33, one reference row) so that the target runs a few
// thousand inputs per second on one core.
//
// KVCHECK_FUZZ_DEFECT=<attention defect> checks that defect's kernel instead.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/engine_under_fuzz.h"
#include "fuzz/fuzz_support.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "properties/kernel_case.h"
#include "properties/tensor_spec.h"
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
using properties::TensorSpec;
using reference::AttentionProblem;

// A strided layout for `values` of `shape`: one of the 24 buffer orders, padded or not.
TensorSpec Strided(FuzzedDataProvider& in, DType dtype, std::vector<int64_t> shape,
                   std::vector<float> values) {
  TensorSpec spec = TensorSpec::Contiguous(dtype, std::move(shape), std::move(values));
  const uint8_t layout = in.ConsumeIntegral<uint8_t>();
  if (layout & 1) {
    std::vector<int>& order = spec.buffer_order;
    for (int n = (layout >> 1) % 24; n > 0; --n) std::next_permutation(order.begin(), order.end());
  }
  if (layout & 0x40) {
    for (int d = 0; d < 4; ++d) {
      spec.padding[d] = 1 + (layout >> 7);
      spec.offset[d] = (d + layout) % 2;
    }
  }
  return spec;
}

// Special values put into q, k or v: each exactly representable in `dtype` once rounded.
void InsertSpecials(FuzzedDataProvider& in, AttentionProblem& p, std::string& described) {
  const float specials[] = {
      NAN,    INFINITY, -INFINITY, 1e-40f /* f32 subnormal */, 6e-8f /* f16 subnormal */, 65504.0f,
      -3e38f, 0.0f,     -0.0f};
  const int count = in.ConsumeIntegralInRange(0, 3);
  for (int n = 0; n < count; ++n) {
    const int which = in.ConsumeIntegralInRange(0, 2);
    std::vector<float>& values = which == 0 ? p.q : which == 1 ? p.k : p.v;
    if (values.empty()) continue;
    const size_t at = in.ConsumeIntegralInRange<size_t>(0, values.size() - 1);
    values[at] = RoundToDType(Pick(in, specials), p.output_dtype);
    absl::StrAppend(&described, " ", std::string(1, "qkv"[which]), "[", at, "]=", values[at]);
  }
}

KernelCase DecodeCase(FuzzedDataProvider& in, std::string& described) {
  KernelCase c;
  AttentionProblem& p = c.problem;
  p.output_dtype = Pick(in, kAllDTypes);
  p.batch = in.ConsumeIntegralInRange<int64_t>(1, 2);
  p.num_kv_heads = in.ConsumeIntegralInRange<int64_t>(1, 2);
  p.num_heads = p.num_kv_heads * Pick<int64_t>(in, {1, 2, 3, 4});
  p.head_dim = Pick<int64_t>(in, {1, 2, 3, 4, 5, 8, 16, 33});
  p.q_len = in.ConsumeBool() ? 1 : in.ConsumeIntegralInRange<int64_t>(2, 6);
  p.kv_len = in.ConsumeBool() ? Pick<int64_t>(in, {0, 1, 2, 15, 16, 17, 31, 32, 33, 40})
                              : in.ConsumeIntegralInRange<int64_t>(0, 40);
  const uint8_t options = in.ConsumeIntegral<uint8_t>();
  if (options & 1) p.scale = Pick(in, {1.0f, 0.05f, 0.3f, 4.0f});
  if (options & 2) p.softcap = Pick(in, {5.0f, 30.0f});
  if (options & 4) {
    for (int64_t h = 0; h < p.num_heads; ++h) {
      p.alibi_slopes.push_back(std::ldexp(1.0f, -static_cast<int>(h % 8 + 1)));
    }
  }
  p.causal = options & 8;
  if (options & 16) p.window = in.ConsumeIntegralInRange<int64_t>(1, 16);
  const int positions = in.ConsumeIntegralInRange(0, 2);
  c.positions_kind = positions == 0 ? "default" : positions == 1 ? "ring" : "varlen";
  if (positions == 1 && p.kv_len > 0) {
    properties::SetRingPositions(p, p.kv_len + in.ConsumeIntegralInRange<int64_t>(0, 50));
  } else if (positions == 2) {
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < p.batch; ++b) {
      lengths.push_back(in.ConsumeIntegralInRange<int64_t>(0, p.kv_len));
    }
    properties::SetVarlenPositions(p, lengths);
  }
  const float amplitude = Pick(in, {1.0f, 1.0f, 8.0f, 64.0f, 4096.0f});
  const uint32_t seed = in.ConsumeIntegral<uint32_t>();
  p.q = properties::SeededValues(seed, p.batch * p.num_heads * p.q_len * p.head_dim, amplitude,
                                 p.output_dtype);
  p.k = properties::SeededValues(seed + 1, p.batch * p.num_kv_heads * p.kv_len * p.head_dim,
                                 amplitude, p.output_dtype);
  p.v = properties::SeededValues(seed + 2, p.batch * p.num_kv_heads * p.kv_len * p.head_dim, 1.0f,
                                 p.output_dtype);
  described = absl::StrCat("amplitude ", amplitude, " seed ", seed);
  InsertSpecials(in, p, described);
  if (options & 32) {
    p.mask_batch = in.ConsumeBool() ? p.batch : 1;
    p.mask_heads = in.ConsumeBool() ? p.num_heads : 1;
    // Each mask element from two bits of a seeded stream: 0, -inf, or a finite bias.
    const std::vector<float> noise = properties::SeededValues(
        in.ConsumeIntegral<uint32_t>(), p.mask_batch * p.mask_heads * p.q_len * p.kv_len, 1.0f,
        DType::kF32);
    for (float x : noise) {
      const int pick = static_cast<int>(std::fabs(x) * 1024.0f) % 5;
      p.mask.push_back(pick <= 1 ? 0.0f : pick == 2 ? -INFINITY : pick == 3 ? -1.5f : 0.75f);
    }
    c.mask = Strided(in, DType::kF32, {p.mask_batch, p.mask_heads, p.q_len, p.kv_len}, p.mask);
  }
  c.q = Strided(in, p.output_dtype, {p.batch, p.num_heads, p.q_len, p.head_dim}, p.q);
  c.k = Strided(in, p.output_dtype, {p.batch, p.num_kv_heads, p.kv_len, p.head_dim}, p.k);
  c.v = Strided(in, p.output_dtype, {p.batch, p.num_kv_heads, p.kv_len, p.head_dim}, p.v);
  // One row for the reference, chosen by the input (the exact reference dominates the cost).
  const int64_t rows = p.batch * p.num_heads * p.q_len;
  p.checked_rows = {in.ConsumeIntegralInRange<int64_t>(0, rows - 1)};
  return c;
}

struct Kernel {
  std::string name;
  std::function<absl::StatusOr<Tensor>(const properties::KernelInputs& in)> run;
};

// The kernels one input runs: the defect's kernel, or one registered kernel (the input picks
// it, src/attention/kernel_registry.h) and naive, the plainest one.
std::vector<Kernel> KernelsUnderFuzz(FuzzedDataProvider& in) {
  if (const defects::Defect* defect = DefectUnderFuzz(defects::DefectKind::kAttention)) {
    return {{defect->name, [defect](const properties::KernelInputs& in) {
               return defect->kernel(in.q, in.k, in.v, in.params);
             }}};
  }
  const FuzzedEngine* engine = EngineUnderFuzz();
  std::vector<const AttentionKernel*> kernels;
  if (engine != nullptr) {
    for (const AttentionKernel& kernel : engine->kernels) kernels.push_back(&kernel);
  } else {
    for (const AttentionKernel& kernel : AttentionKernels()) {
      if (kernel.emulated() == kEmulatedKernels) kernels.push_back(&kernel);
    }
  }
  const AttentionKernel& picked =
      *kernels[in.ConsumeIntegralInRange<size_t>(0, kernels.size() - 1)];
  auto runner = [](const AttentionKernel& kernel) {
    return [&kernel](const properties::KernelInputs& in) {
      return kernel.run(in.q, in.k, in.v, in.params, 1);
    };
  };
  std::vector<Kernel> chosen = {{picked.name, runner(picked)}};
  if (engine == nullptr && std::string(picked.name) != "naive") {
    chosen.push_back({"naive", runner(*FindAttentionKernel("naive"))});
  }
  return chosen;
}

int FuzzOne(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string values;
  const KernelCase c = DecodeCase(in, values);
  const std::vector<Kernel> kernels = KernelsUnderFuzz(in);
  const AttentionProblem& p = c.problem;
  Trace trace;
  std::ostringstream shown;
  properties::showValue(c, shown);
  trace.Add(shown.str());
  trace.Add("values: ", values, "; reference row ", absl::StrJoin(p.checked_rows, ","),
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
