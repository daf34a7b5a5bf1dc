#include "properties/attention_bad_calls.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "properties/kernel_case.h"
#include "rapidcheck.h"
#include "src/attention/kernel_registry.h"
#include "src/tensor/copy_ops.h"

namespace kvcheck::properties {
namespace {

// One thing made wrong in a valid call, and the word its error must contain.
enum class Wrong {
  kScaleNan, kScaleInfinite, kSoftcapNegative, kSoftcapNan, kSoftcapInfinite, kWindowNegative,
  kAlibiCount, kMaskDtype, kMaskRank, kMaskBatch, kMaskHeads, kMaskQueries, kMaskKeys,
  kQPositionsCount, kKvPositionsCount, kVLength, kVHeadDim, kQHeadDim, kKvBatch,
  kHeadsNotMultiple, kNoKvHeads, kHeadDimZero, kDtypesDiffer, kQRank,
  kCount,
};

const char* Name(Wrong w) {
  static_assert(static_cast<int>(Wrong::kCount) == 24, "one name per wrong thing");
  static const char* const kNames[] = {
      "scale NaN", "scale infinite", "softcap negative", "softcap NaN", "softcap infinite",
      "window negative", "ALiBi slope count", "mask dtype", "mask rank", "mask batch",
      "mask heads", "mask queries", "mask keys", "q_positions count", "kv_positions count",
      "v length", "v head dim", "q head dim", "k and v batch", "H not a multiple of KH",
      "KH = 0", "D = 0", "dtypes differ", "q rank 3"};
  return kNames[static_cast<int>(w)];
}

// What the error message must name (attention_params.cc words it).
const char* Needle(Wrong w) {
  switch (w) {
    case Wrong::kScaleNan: case Wrong::kScaleInfinite: return "scale";
    case Wrong::kSoftcapNegative: case Wrong::kSoftcapNan: case Wrong::kSoftcapInfinite:
      return "softcap";
    case Wrong::kWindowNegative: return "window";
    case Wrong::kAlibiCount: return "ALiBi";
    case Wrong::kMaskDtype: case Wrong::kMaskRank: case Wrong::kMaskBatch:
    case Wrong::kMaskHeads: case Wrong::kMaskQueries: case Wrong::kMaskKeys: return "mask";
    case Wrong::kQPositionsCount: return "q_positions";
    case Wrong::kKvPositionsCount: return "kv_positions";
    case Wrong::kVLength: case Wrong::kVHeadDim: return "v shape";
    case Wrong::kQHeadDim: case Wrong::kHeadDimZero: return "head_dim";
    case Wrong::kKvBatch: return "batch";
    case Wrong::kHeadsNotMultiple: case Wrong::kNoKvHeads: return "num_kv_heads";
    case Wrong::kDtypesDiffer: return "dtypes differ";
    case Wrong::kQRank: return "rank 4";
    case Wrong::kCount: break;
  }
  return "";
}

Tensor Zeros(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> t = Tensor::Zeros(dtype, shape);
  RC_ASSERT(t.ok());
  return *std::move(t);
}

std::vector<int64_t> Iota(int64_t count) {
  std::vector<int64_t> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = i;
  return values;
}

// A size one off `right`, never negative.
int64_t OneOff(int64_t right, bool more) { return more || right == 0 ? right + 1 : right - 1; }

// An entry count one off `right`, never 0: no slopes or positions at all is a valid call (no
// ALiBi, default positions).
int64_t CountOff(int64_t right, bool more) { return more || right <= 1 ? right + 1 : right - 1; }

// A KV head count that does not divide H: H + 1 (more), else the largest count between 1
// and H that does not divide it (3 of 4, 2 of 3; H + 1 where every count does).
int64_t KvHeadsNotDividing(int64_t H, bool more) {
  for (int64_t kh = H - 1; kh > 1 && !more; --kh) {
    if (H % kh != 0) return kh;
  }
  return H + 1;
}

// A mask head count that is neither 1 nor H: H + 1 (more), else one per KV head where that
// differs from both (a mask built per KV head for a GQA call), else H - 1 where that is 2 or
// more, else H + 1.
int64_t WrongMaskHeads(int64_t H, int64_t KH, bool more) {
  if (more) return H + 1;
  if (KH != 1 && KH != H) return KH;
  return H - 1 >= 2 ? H - 1 : H + 1;
}

// `in` with `w` made wrong. `more`: which way a count or size is off.
void MakeWrong(Wrong w, bool more, KernelInputs& in) {
  const DType dtype = in.q.dtype();
  const int64_t B = in.q.dim(0), H = in.q.dim(1), Sq = in.q.dim(2), D = in.q.dim(3);
  const int64_t KH = in.k.dim(1), Skv = in.k.dim(2);
  AttentionParams& p = in.params;
  auto mask_of_shape = [&](std::vector<int64_t> shape, DType mask_dtype = DType::kF32) {
    p.mask = Zeros(mask_dtype, std::move(shape));
  };
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (w) {
    case Wrong::kScaleNan: p.scale = std::nanf(""); break;
    case Wrong::kScaleInfinite: p.scale = more ? kInf : -kInf; break;
    case Wrong::kSoftcapNegative: p.softcap = more ? -0.5f : -std::numeric_limits<float>::min(); break;
    case Wrong::kSoftcapNan: p.softcap = std::nanf(""); break;
    case Wrong::kSoftcapInfinite: p.softcap = kInf; break;
    case Wrong::kWindowNegative:
      p.window = more ? -1 : std::numeric_limits<int64_t>::min();
      break;
    case Wrong::kAlibiCount: p.alibi_slopes.assign(CountOff(H, more), -0.25f); break;
    case Wrong::kMaskDtype: mask_of_shape({B, H, Sq, Skv}, dtype == DType::kF32 ? DType::kF16 : dtype); break;
    case Wrong::kMaskRank: mask_of_shape({B * H, Sq, Skv}); break;
    case Wrong::kMaskBatch: mask_of_shape({B + 1, 1, Sq, Skv}); break;
    case Wrong::kMaskHeads:
      mask_of_shape({1, WrongMaskHeads(H, KH, more), Sq, Skv});
      break;
    case Wrong::kMaskQueries: mask_of_shape({1, 1, OneOff(Sq, more), Skv}); break;
    case Wrong::kMaskKeys: mask_of_shape({B, 1, Sq, OneOff(Skv, more)}); break;
    case Wrong::kQPositionsCount: p.q_positions = Iota(CountOff(B * Sq, more)); break;
    case Wrong::kKvPositionsCount: p.kv_positions = Iota(CountOff(B * Skv, more)); break;
    case Wrong::kVLength: in.v = Zeros(dtype, {B, KH, OneOff(Skv, more), D}); break;
    case Wrong::kVHeadDim: in.v = Zeros(dtype, {B, KH, Skv, OneOff(D, more)}); break;
    case Wrong::kQHeadDim: in.q = Zeros(dtype, {B, H, Sq, OneOff(D, more)}); break;
    case Wrong::kKvBatch:
      in.k = Zeros(dtype, {OneOff(B, more), KH, Skv, D});
      in.v = Zeros(dtype, {OneOff(B, more), KH, Skv, D});
      break;
    case Wrong::kHeadsNotMultiple:
      in.k = Zeros(dtype, {B, KvHeadsNotDividing(H, more), Skv, D});
      in.v = Zeros(dtype, {B, KvHeadsNotDividing(H, more), Skv, D});
      break;
    case Wrong::kNoKvHeads:
      in.k = Zeros(dtype, {B, 0, Skv, D});
      in.v = Zeros(dtype, {B, 0, Skv, D});
      break;
    case Wrong::kHeadDimZero:
      in.q = Zeros(dtype, {B, H, Sq, 0});
      in.k = Zeros(dtype, {B, KH, Skv, 0});
      in.v = Zeros(dtype, {B, KH, Skv, 0});
      break;
    case Wrong::kDtypesDiffer: {
      absl::StatusOr<Tensor> cast = Cast(in.q, dtype == DType::kF32 ? DType::kBF16 : DType::kF32);
      RC_ASSERT(cast.ok());
      in.q = *std::move(cast);
      break;
    }
    case Wrong::kQRank: in.q = Zeros(dtype, {B * H, Sq, D}); break;
    case Wrong::kCount: break;
  }
}

// The bits of every element of the call's tensors (a kernel must not write its inputs).
std::vector<uint32_t> Bits(const KernelInputs& in) {
  std::vector<const Tensor*> tensors = {&in.q, &in.k, &in.v};
  if (in.params.mask.has_value()) tensors.push_back(&*in.params.mask);
  std::vector<uint32_t> bits;
  for (const Tensor* t : tensors) {
    const std::vector<uint32_t> tensor_bits = t->ToBits();
    bits.insert(bits.end(), tensor_bits.begin(), tensor_bits.end());
  }
  return bits;
}

// Sizes up to 2^40 (2^n, 2^n +- 1), shrinking to 1.
rc::Gen<int64_t> GenHugeSize() {
  return WeightedOneOf<int64_t>(
      {{1, rc::gen::inRange<int64_t>(1, 9)},
       {1, rc::gen::map(rc::gen::pair(rc::gen::inRange(10, 41), NearZero(-1, 1)),
                        [](std::pair<int, int> e) { return (int64_t{1} << e.first) + e.second; })}});
}

// One of the subject's kernels, printed by name in a counterexample.
const AttentionKernel* PickKernel(const Subject& subject) {
  std::vector<std::string> names;
  for (const AttentionKernel& kernel : subject.kernels) names.push_back(kernel.name);
  const std::string name = *ChoiceOf(names).as("kernel");
  for (const AttentionKernel& kernel : subject.kernels) {
    if (kernel.name == name) return &kernel;
  }
  return nullptr;
}

}  // namespace

PropertySpec BadCallsRefused(const Subject& subject) {
  return {"attention/bad_calls_refused", 200, [&subject] {
            KernelCaseLimits limits;
            limits.features = subject.common_kernel_features();
            limits.dtypes = subject.common_kernel_dtypes();
            const KernelCase c = *GenKernelCase(40, limits);
            const Wrong wrong =
                static_cast<Wrong>(*Uniform(0, static_cast<int>(Wrong::kCount)).as("what is wrong"));
            const bool more = *rc::gen::arbitrary<bool>().as("one more (else one fewer)");
            const AttentionKernel& kernel = *PickKernel(subject);
            const int threads = kernel.threaded ? *Uniform(1, 3).as("threads") : 1;
            RC_TAG(Name(wrong));
            RC_TAG(kernel.name);
            RunIsolated([&] {
              absl::StatusOr<KernelInputs> valid = MakeKernelInputs(c);
              RC_ASSERT(valid.ok());
              RC_PRE(kernel.admits(valid->q, valid->k));
              KernelInputs in = *std::move(valid);
              MakeWrong(wrong, more, in);
              const std::vector<uint32_t> before = Bits(in);
              const absl::StatusOr<Tensor> out = kernel.run(in.q, in.k, in.v, in.params, threads);
              if (out.ok()) {
                RC_FAIL(absl::StrCat(kernel.name, " computed a call with ", Name(wrong),
                                     ": q ", DimsToString(in.q.shape()), ", k ",
                                     DimsToString(in.k.shape()), ", v ",
                                     DimsToString(in.v.shape())));
              }
              if (out.status().code() != absl::StatusCode::kInvalidArgument ||
                  !absl::StrContains(out.status().message(), Needle(wrong))) {
                RC_FAIL(absl::StrCat(kernel.name, " refused a call with ", Name(wrong),
                                     " with ", out.status().ToString(),
                                     "; expected kInvalidArgument naming '", Needle(wrong),
                                     "'"));
              }
              if (Bits(in) != before) {
                RC_FAIL(absl::StrCat(kernel.name, " wrote into its inputs while refusing ",
                                     Name(wrong)));
              }
            });
          }};
}

PropertySpec EmptyCalls(const Subject& subject) {
  return {"attention/empty_calls", 100, [&subject] {
            const int zero = *Uniform(0, 3).as("empty dimension: B, H or Sq");
            const int64_t kv_heads = *rc::gen::inRange<int64_t>(1, 4).as("KH");
            const int64_t group = *rc::gen::inRange<int64_t>(1, 4).as("H / KH");
            const int64_t head_dim = *rc::gen::inRange<int64_t>(1, 80).as("D");
            int64_t batch = 0, heads = kv_heads * group, q_len = 0, kv_len = 0;
            if (zero == 0) {  // no rows: every other size may be huge
              q_len = *GenHugeSize().as("Sq");
              kv_len = *GenHugeSize().as("Skv");
            } else if (zero == 1) {  // H = 0: the keys are real, the queries huge
              heads = 0;
              batch = *rc::gen::inRange<int64_t>(1, 4).as("B");
              q_len = *GenHugeSize().as("Sq");
              kv_len = *rc::gen::inRange<int64_t>(0, 40).as("Skv");
            } else {  // Sq = 0: a huge batch of no keys, or real keys
              const bool huge = *rc::gen::arbitrary<bool>().as("huge batch, no keys");
              batch = huge ? *GenHugeSize().as("B") : *rc::gen::inRange<int64_t>(1, 4).as("B");
              kv_len = huge ? 0 : *rc::gen::inRange<int64_t>(0, 40).as("Skv");
            }
            const uint32_t dtypes = subject.common_kernel_dtypes();
            std::vector<DType> allowed;
            for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
              if ((dtypes >> static_cast<int>(d)) & 1) allowed.push_back(d);
            }
            RC_PRE(!allowed.empty());
            const DType dtype = *ChoiceOf(allowed).as("dtype");
            RC_TAG(DTypeName(dtype));
            const uint32_t features = subject.common_kernel_features();
            AttentionParams params;
            if (features & kFeatureCausal) params.causal = *rc::gen::arbitrary<bool>().as("causal");
            if (features & kFeatureWindow) params.window = *rc::gen::inRange<int64_t>(0, 5).as("window");
            if (features & kFeatureSoftcap) params.softcap = *Choice(0.0f, 30.0f).as("softcap");
            if ((features & kFeatureAlibi) && heads > 0 && *rc::gen::arbitrary<bool>().as("ALiBi")) {
              params.alibi_slopes.assign(heads, -0.125f);
            }
            if ((features & kFeaturePositions) && batch * kv_len > 0 && batch * kv_len <= 1024 &&
                *rc::gen::arbitrary<bool>().as("kv positions")) {
              params.kv_positions = Iota(batch * kv_len);
            }
            const AttentionKernel& kernel = *PickKernel(subject);
            const int threads = kernel.threaded ? *Uniform(1, 3).as("threads") : 1;
            RC_TAG(zero == 0 ? "B = 0" : zero == 1 ? "H = 0" : "Sq = 0");
            RC_TAG(kernel.name);
            RunIsolated([&] {
              const Tensor q = Zeros(dtype, {batch, heads, q_len, head_dim});
              absl::StatusOr<Tensor> k = Tensor::Filled(dtype, {batch, kv_heads, kv_len, head_dim}, 0.5f);
              RC_ASSERT(k.ok());
              RC_PRE(kernel.admits(q, *k));
              const absl::StatusOr<Tensor> out = kernel.run(q, *k, *k, params, threads);
              if (!out.ok()) {
                RC_FAIL(absl::StrCat(kernel.name, " refused an empty call: q ",
                                     DimsToString(q.shape()), ", k ", DimsToString(k->shape()),
                                     ": ", out.status().ToString()));
              }
              if (out->shape() != q.shape() || out->dtype() != dtype) {
                RC_FAIL(absl::StrCat(kernel.name, " returned ", DTypeName(out->dtype()), " ",
                                     DimsToString(out->shape()), " for q ",
                                     DTypeName(dtype), " ", DimsToString(q.shape())));
              }
            });
          }};
}

}  // namespace kvcheck::properties
