#include "properties/attention_properties.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "properties/attention_bad_calls.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "properties/kernel_case.h"
#include "properties/precision_envelope.h"
#include "properties/straightforward_attention.h"
#include "properties/subject.h"
#include "properties/ratio_wire.h"
#include "rapidcheck.h"
#include "reference/reference_attention.h"
#include "src/attention/flash_attention.h"
#include "src/attention/kernel_registry.h"
#include "src/attention/naive_attention.h"
#include "src/cache/ring_cache.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::properties {
namespace {

using reference::AttentionComparison;
using reference::ReferenceAttention;

// The exact reference costs ~0.2 us per unit; this keeps a case under ~40 ms.
constexpr int64_t kReferenceBudget = 200000;

// A kernel of the registry at a thread count, as the laws run it.
struct KernelRun {
  std::string name;  // "flash", "flash@2 threads", ...
  const AttentionKernel* kernel;
  int threads;
  absl::StatusOr<Tensor> operator()(const KernelInputs& in) const {
    return kernel->run(in.q, in.k, in.v, in.params, threads);
  }
  // False for a call over an emulated kernel's budget (kernel_registry.h): the law skips the
  // kernel on that case, and the kernel table's case count shows it.
  bool admits(const KernelInputs& in) const { return kernel->admits(in.q, in.k); }
};

// Every kernel of the subject on one thread, and the threaded ones on two as well.
std::vector<KernelRun> KernelRuns(const Subject& subject) {
  std::vector<KernelRun> runs;
  for (const AttentionKernel& kernel : subject.kernels) {
    runs.push_back({kernel.name, &kernel, 1});
    if (kernel.threaded) runs.push_back({absl::StrCat(kernel.name, "@2 threads"), &kernel, 2});
  }
  return runs;
}

// Statistics recorded inside an isolated check travel back as ratio records labelled
// "<kernel>\t<dtype>".
void Record(KernelStatsMap& stats, const std::string& kernel, DType dtype,
            const AttentionComparison& comparison, const ReferenceAttention& exact) {
  KernelStats& entry = stats[{kernel, DTypeName(dtype)}];
  ++entry.cases;
  entry.unchecked += comparison.unbounded;
  entry.hull_bounded += exact.hull_bounded;
  entry.ratios.Merge(comparison.ratios);
}

std::string EncodeStats(const KernelStatsMap& stats) {
  std::string wire;
  for (const auto& [key, entry] : stats) {
    AppendRatioRecord(wire, absl::StrCat(key.first, "\t", key.second),
                      {entry.cases, entry.unchecked, entry.hull_bounded}, entry.ratios);
  }
  return wire;
}

void MergeStats(std::string_view wire, KernelStatsMap* stats) {
  ForEachRatioRecord(wire, [stats](std::string_view label, const RecordCounts& counts,
                                   const reference::RatioStats& ratios) {
    const size_t tab = label.find('\t');
    KernelStats& entry =
        (*stats)[{std::string(label.substr(0, tab)), std::string(label.substr(tab + 1))}];
    entry.cases += counts[0];
    entry.unchecked += counts[1];
    entry.hull_bounded += counts[2];
    entry.ratios.Merge(ratios);
  });
}

// What the subject's kernels all implement.
KernelCaseLimits LimitsOf(const Subject& subject) {
  KernelCaseLimits limits;
  limits.features = subject.common_kernel_features();
  limits.dtypes = subject.common_kernel_dtypes();
  return limits;
}

KernelCase GenSampledCase(int64_t max_kv_len = 600, KernelCaseLimits limits = {}) {
  KernelCase c = *GenKernelCase(max_kv_len, limits);
  SampleCheckedRows(c, kReferenceBudget);
  return c;
}

KernelInputs Inputs(const KernelCase& c) {
  absl::StatusOr<KernelInputs> in = MakeKernelInputs(c);
  RC_ASSERT(in.ok());
  return *std::move(in);
}

// The precision-envelope verdict for one kernel's output; records the envelope ratio.
void CheckEnvelope(const std::string& name, const KernelCase& c, const ReferenceAttention& exact,
                   const std::vector<float>& baseline, const absl::StatusOr<Tensor>& out,
                   KernelStatsMap* stats) {
  if (!out.ok()) RC_FAIL(absl::StrCat(name, " failed: ", out.status().ToString()));
  const EnvelopeResult envelope =
      CheckPrecisionEnvelope(out->ToFloats(), baseline, exact, c.problem.output_dtype);
  if (!envelope.ok) RC_FAIL(absl::StrCat(name, ": ", envelope.message));
  if (stats != nullptr) {
    KernelStats& entry = (*stats)[{name, DTypeName(c.problem.output_dtype)}];
    ++entry.cases;
    entry.ratios.Add(envelope.ratio);
  }
}

void Classify(const KernelCase& c) {
  const reference::AttentionProblem& p = c.problem;
  RC_TAG(c.positions_kind, p.q_len == 1 ? "decode" : "prefill");
  RC_CLASSIFY(p.causal, "causal");
  RC_CLASSIFY(p.window > 0, "window");
  RC_CLASSIFY(!p.mask.empty(), "mask");
  RC_CLASSIFY(!p.alibi_slopes.empty(), "alibi");
  RC_CLASSIFY(p.softcap > 0, "softcap");
  RC_CLASSIFY(p.num_heads != p.num_kv_heads, "gqa");
  RC_CLASSIFY(p.num_heads / p.num_kv_heads >= 16, "group >= 16");
  RC_CLASSIFY(p.kv_len == 0, "Skv = 0");
  RC_CLASSIFY(p.kv_len > 0 && p.kv_len % 32 == 0, "Skv a tile multiple");
  RC_CLASSIFY(p.kv_len % 32 == 1 || p.kv_len % 32 == 31, "Skv a tile multiple +-1");
  RC_CLASSIFY(p.kv_len >= 512, "Skv >= 512");
  RC_CLASSIFY(p.window > 0 && std::abs(p.kv_len - p.window) <= 1, "Skv = W +- 1");
  RC_CLASSIFY(p.head_dim % 16 != 0 && p.head_dim > 16, "D with a vector tail");
  RC_CLASSIFY(!c.notes.empty(), "special values or mask pattern");
}

PropertySpec KernelsVsReference(KernelStatsMap* stats, const Subject& subject) {
  return {"attention/kernels_vs_reference", 300, [stats, runs = KernelRuns(subject),
                                                  limits = LimitsOf(subject)] {
            const KernelCase c = GenSampledCase(600, limits);
            Classify(c);
            MergeStats(RunIsolatedWithPayload([&] {
                         const ReferenceAttention exact =
                             reference::ComputeReferenceAttention(c.problem);
                         const KernelInputs in = Inputs(c);
                         KernelStatsMap local;
                         for (const KernelRun& run : runs) {
                           if (!run.admits(in)) continue;
                           NoteStep(absl::StrCat("kernel ", run.name));
                           Record(local, run.name, c.problem.output_dtype,
                                  Check(run.name, c, exact, run(in)), exact);
                         }
                         return EncodeStats(local);
                       }),
                       stats);
          }};
}

// Every kernel against the straightforward f32 baseline (precision_envelope.h): a precision
// regression too small for the bound is a failure of its own.
PropertySpec PrecisionEnvelope(KernelStatsMap* stats, const Subject& subject) {
  return {"attention/precision_envelope", 200, [stats, runs = KernelRuns(subject),
                                                limits = LimitsOf(subject)] {
            const KernelCase c = GenSampledCase(600, limits);
            MergeStats(RunIsolatedWithPayload([&] {
                         const ReferenceAttention exact =
                             reference::ComputeReferenceAttention(c.problem);
                         const std::vector<float> baseline = StraightforwardAttention(c.problem);
                         const KernelInputs in = Inputs(c);
                         KernelStatsMap local;
                         for (const KernelRun& run : runs) {
                           if (!run.admits(in)) continue;
                           NoteStep(absl::StrCat("kernel ", run.name));
                           CheckEnvelope(run.name, c, exact, baseline, run(in), &local);
                         }
                         return EncodeStats(local);
                       }),
                       stats);
          }};
}

PropertySpec EverySimdTarget(KernelStatsMap* stats) {
  return {"attention/flash_every_simd_target", 60, [stats] {
            // Half the cases f16, and special values in half: the older targets widen f16
            // in software, where an inf or NaN must stay one (flash_decode_simd.cc).
            KernelCaseLimits limits;
            if (*rc::gen::arbitrary<bool>().as("f16 only")) limits.dtypes = 1u << static_cast<int>(DType::kF16);
            limits.specials_percent = 50;
            const KernelCase c = GenSampledCase(160, limits);
            MergeStats(RunIsolatedWithPayload([&] {
                         const ReferenceAttention exact =
                             reference::ComputeReferenceAttention(c.problem);
                         const KernelInputs in = Inputs(c);
                         KernelStatsMap local;
                         for (const std::string& target : SupportedSimdTargets()) {
                           NoteStep(absl::StrCat("flash pinned to ", target));
                           RC_ASSERT(PinSimdTarget(target));
                           const absl::StatusOr<Tensor> out =
                               FlashAttention(in.q, in.k, in.v, in.params);
                           RC_ASSERT(PinSimdTarget(""));
                           Record(local, "flash/" + target, c.problem.output_dtype,
                                  Check("flash/" + target, c, exact, out), exact);
                         }
                         return EncodeStats(local);
                       }),
                       stats);
          }};
}

// The last query row computed alone (decode) and as part of the block (prefill), by each of
// `runs`.
PropertySpec DecodeEqualsPrefillLastRow(std::vector<KernelRun> runs, KernelCaseLimits limits) {
  return {"attention/decode_equals_prefill_last_row", 100, [runs, limits] {
            KernelCase c = GenSampledCase(200, limits);
            reference::AttentionProblem& p = c.problem;
            RC_PRE(p.q_len >= 2);
            // Only the last row of every (b, h) is compared.
            p.checked_rows.clear();
            for (int64_t bh = 0; bh < p.batch * p.num_heads; ++bh) {
              p.checked_rows.push_back(bh * p.q_len + p.q_len - 1);
            }
            RunIsolated([&] {
              const ReferenceAttention exact = reference::ComputeReferenceAttention(p);
              KernelInputs in = Inputs(c);
              // Decode: the last query row with its position and mask row. With default
              // positions the last row's default position is already Skv - 1 (bottom-right), so
              // a kernel without explicit positions gets none.
              KernelInputs last = in;
              last.q = *Narrow(in.q, 2, p.q_len - 1, 1);
              last.params.q_positions.clear();
              if (!c.problem.q_positions.empty()) {
                for (int64_t b = 0; b < p.batch; ++b) {
                  last.params.q_positions.push_back(p.q_positions[b * p.q_len + p.q_len - 1]);
                }
              }
              if (in.params.mask.has_value()) last.params.mask = *Narrow(*in.params.mask, 2, p.q_len - 1, 1);
              for (const KernelRun& run : runs) {
              if (!run.admits(in)) continue;
              NoteStep(absl::StrCat("kernel ", run.name));
              const absl::StatusOr<Tensor> prefill = run(in);
              Check(run.name + " (prefill)", c, exact, prefill);
              const absl::StatusOr<Tensor> decode = run(last);
              if (!decode.ok()) RC_FAIL(absl::StrCat(run.name, " (decode) failed: ", decode.status().ToString()));
              const std::vector<float> prefill_values = prefill->ToFloats();
              const std::vector<float> decode_values = decode->ToFloats();
              for (int64_t bh = 0; bh < p.batch * p.num_heads; ++bh) {
                for (int64_t d = 0; d < p.head_dim; ++d) {
                  const int64_t at = (bh * p.q_len + p.q_len - 1) * p.head_dim + d;
                  const float a = prefill_values[at], b = decode_values[bh * p.head_dim + d];
                  const double bound = 2 * exact.bound[at];
                  if (!WithinTwiceTheBound(a, b, exact, static_cast<size_t>(at))) {
                    RC_FAIL(absl::StrFormat(
                        "%s: row %d element %d: prefill %.9g, decode %.9g, exact %.17g (%s), 2x bound %.3g",
                        run.name, bh, d, a, b, exact.value[at], reference::ExpectationName(exact.expectation[at]),
                        bound));
                  }
                }
              }
              }
            });
          }};
}

PropertySpec ThreadsAndSplits() {
  return {"attention/threads_and_splits", 100, [] {
            const KernelCase c = GenSampledCase();
            const int threads = (*Label("flash threads", Uniform(1, 5))).value;
            const int splits = (*Label("flash key-range splits (0: automatic)", Uniform(0, 6))).value;
            // Tiles of the dense decode kernel: automatic (up to 4096 keys, more than the
            // cases have), or short ones, so that the online rescale between tiles and a
            // tile ending inside a vector run on short rows too.
            const int tile_keys =
                (*Label("flash decode tile keys (0: automatic)",
                        Choice(0, 0, 1, 2, 7, 16, 31, 32, 33, 64, 100))).value;
            RunIsolated([&] {
              const ReferenceAttention exact = reference::ComputeReferenceAttention(c.problem);
              const KernelInputs in = Inputs(c);
              const FlashOptions options{
                  .num_threads = threads, .kv_splits = splits, .decode_tile_keys = tile_keys};
              const absl::StatusOr<Tensor> first =
                  FlashAttention(in.q, in.k, in.v, in.params, options);
              Check(absl::StrCat("flash threads=", threads, " splits=", splits,
                                 " decode_tile_keys=", tile_keys),
                    c, exact, first);
              const absl::StatusOr<Tensor> again =
                  FlashAttention(in.q, in.k, in.v, in.params, options);
              RC_ASSERT(again.ok());
              RC_ASSERT(first->ToBits() == again->ToBits());  // repeatable bit for bit
            });
          }};
}

// Applies the batch permutation `order` (new row b = old row order[b]) to a case.
KernelCase PermuteBatch(const KernelCase& c, const std::vector<int64_t>& order) {
  const reference::AttentionProblem& p = c.problem;
  KernelCase out = c;
  reference::AttentionProblem& o = out.problem;
  auto permute = [&](const std::vector<float>& values, int64_t per_row) {
    std::vector<float> result(values.size());
    for (int64_t b = 0; b < p.batch; ++b) {
      std::copy_n(values.begin() + order[b] * per_row, per_row, result.begin() + b * per_row);
    }
    return result;
  };
  auto permute_positions = [&](const std::vector<int64_t>& values, int64_t per_row) {
    if (values.empty()) return values;
    std::vector<int64_t> result(values.size());
    for (int64_t b = 0; b < p.batch; ++b) {
      std::copy_n(values.begin() + order[b] * per_row, per_row, result.begin() + b * per_row);
    }
    return result;
  };
  o.q = permute(p.q, p.num_heads * p.q_len * p.head_dim);
  o.k = permute(p.k, p.num_kv_heads * p.kv_len * p.head_dim);
  o.v = permute(p.v, p.num_kv_heads * p.kv_len * p.head_dim);
  o.q_positions = permute_positions(p.q_positions, p.q_len);
  o.kv_positions = permute_positions(p.kv_positions, p.kv_len);
  if (!p.mask.empty() && p.mask_batch == p.batch) {
    o.mask = permute(p.mask, p.mask_heads * p.q_len * p.kv_len);
    out.mask->values = o.mask;
  }
  out.q.values = o.q;
  out.k.values = o.k;
  out.v.values = o.v;
  return out;
}

PropertySpec BatchPermutation(const Subject& subject) {
  return {"attention/batch_permutation_permutes_outputs", 100, [runs = KernelRuns(subject),
                                                                limits = LimitsOf(subject)] {
            const KernelCase c = GenSampledCase(200, limits);
            RC_PRE(c.problem.batch >= 2);
            std::vector<int64_t> order(c.problem.batch);
            std::iota(order.begin(), order.end(), 0);
            std::reverse(order.begin(), order.end());
            const KernelCase permuted = PermuteBatch(c, order);
            RunIsolated([&] {
              const KernelInputs a = Inputs(c), b = Inputs(permuted);
              for (const KernelRun& run : runs) {
                if (!run.admits(a)) continue;
                NoteStep(absl::StrCat("kernel ", run.name));
                const absl::StatusOr<Tensor> out = run(a);
                const absl::StatusOr<Tensor> out_permuted = run(b);
                RC_ASSERT(out.ok() && out_permuted.ok());
                for (int64_t row = 0; row < c.problem.batch; ++row) {
                  RC_ASSERT(Narrow(*out, 0, order[row], 1)->ToBits() ==
                            Narrow(*out_permuted, 0, row, 1)->ToBits());
                }
              }
            });
          }};
}

// A ring cache of window W fed a history in chunks; the newest token's attention over what
// it shows equals attention over the full history with a window of W.
PropertySpec RingEqualsWindowedHistory() {
  return {"attention/ring_cache_equals_windowed_history", 100, [] {
            const DType dtype = *GenDType();
            const int64_t batch = (*Label("batch B", Uniform<int64_t>(1, 3))).value;
            const int64_t kv_heads = (*Label("KV heads KH", Uniform<int64_t>(1, 3))).value;
            const int64_t group = (*Label("query heads per KV head", Uniform<int64_t>(1, 4))).value;
            const int64_t head_dim =
                (*Label("head dim D", Choice<int64_t>(1, 4, 8, 33, 64))).value;
            const int64_t window = (*Label("ring window W", Uniform<int64_t>(1, 40))).value;
            const int64_t total = (*Label("tokens appended", Uniform<int64_t>(1, 120))).value;
            const std::vector<int64_t> kv_shape = {batch, kv_heads, total, head_dim};
            const TensorSpec k = *GenTensorSpec(dtype, kv_shape, Values::kFinite, LayoutKind::kContiguous);
            const TensorSpec v = *GenTensorSpec(dtype, kv_shape, Values::kFinite, LayoutKind::kContiguous);
            const TensorSpec q = *GenTensorSpec(dtype, {batch, kv_heads * group, 1, head_dim},
                                                Values::kFinite, LayoutKind::kContiguous);
            // The chunk lengths the history is appended in.
            const std::vector<int64_t> chunks =
                (*Label("appended in chunks of", rc::gen::exec([total, window] {
                   std::vector<int64_t> lengths;
                   for (int64_t at = 0; at < total; at += lengths.back()) {
                     lengths.push_back(
                         std::min<int64_t>(total - at, *Uniform<int64_t>(1, 2 * window + 2)));
                   }
                   return lengths;
                 }))).value;
            RunIsolated([&] {
              const Tensor k_all = *Materialize(k), v_all = *Materialize(v), q_last = *Materialize(q);
              std::unique_ptr<KvCache> ring = *RingCache::Create({.window = window});
              CacheView view;
              int64_t at = 0;
              for (const int64_t chunk : chunks) {
                view = *ring->Append(*Narrow(k_all, 2, at, chunk), *Narrow(v_all, 2, at, chunk));
                at += chunk;
              }
              AttentionParams over_ring;
              over_ring.causal = true;
              over_ring.window = window;
              over_ring.kv_positions = view.positions;
              over_ring.q_positions.assign(batch, total - 1);
              AttentionParams over_history;
              over_history.causal = true;
              over_history.window = window;
              const absl::StatusOr<Tensor> a = FlashAttention(q_last, view.k, view.v, over_ring);
              const absl::StatusOr<Tensor> b = FlashAttention(q_last, k_all, v_all, over_history);
              RC_ASSERT(a.ok() && b.ok());
              reference::AttentionProblem p;
              p.batch = batch;
              p.num_heads = kv_heads * group;
              p.num_kv_heads = kv_heads;
              p.q_len = 1;
              p.kv_len = total;
              p.head_dim = head_dim;
              p.q = q.values;
              p.k = k.values;
              p.v = v.values;
              p.causal = true;
              p.window = window;
              p.output_dtype = dtype;
              const ReferenceAttention exact = reference::ComputeReferenceAttention(p);
              const std::vector<int64_t> shape = {batch, p.num_heads, 1, head_dim};
              const AttentionComparison ring_vs_exact = reference::CompareAttention(a->ToFloats(), exact, shape);
              const AttentionComparison history_vs_exact = reference::CompareAttention(b->ToFloats(), exact, shape);
              if (!ring_vs_exact.ok()) RC_FAIL(absl::StrCat("over the ring: ", ring_vs_exact.first_violation));
              if (!history_vs_exact.ok()) RC_FAIL(absl::StrCat("over the history: ", history_vs_exact.first_violation));
            });
            RC_CLASSIFY(total > window, "wrapped");
          }};
}

}  // namespace

std::string FormatKernelStats(const KernelStatsMap& stats) {
  std::string text =
      absl::StrFormat("%-24s %-6s %7s %10s %12s %10s %10s\n", "kernel", "dtype", "cases",
                      "max ratio", "median ratio", "unchecked", "hull-bound");
  for (const auto& [key, entry] : stats) {
    absl::StrAppendFormat(&text, "%-24s %-6s %7d %10.3g %12.3g %10d %10d\n", key.first,
                          key.second, entry.cases, entry.ratios.Max(), entry.ratios.Median(),
                          entry.unchecked, entry.hull_bounded);
  }
  absl::StrAppend(&text,
                  "(unchecked: elements outside the no-overflow regime of the bound; hull-bound: "
                  "elements checked against the convex-hull bound, ERROR_BOUND.md step 5)\n");
  return text;
}

std::string FormatEnvelopeStats(const KernelStatsMap& stats) {
  std::string text = absl::StrFormat("%-24s %-6s %7s %10s %12s\n", "kernel", "dtype", "cases",
                                     "max ratio", "median ratio");
  for (const auto& [key, entry] : stats) {
    absl::StrAppendFormat(&text, "%-24s %-6s %7d %10.3g %12.3g\n", key.first, key.second,
                          entry.cases, entry.ratios.Max(), entry.ratios.Median());
  }
  return text;
}

namespace {

// One kernel on generated cases, judged by `verdict` (the bound or the precision envelope):
// "attention/<name>/<law>".
PropertySpec SingleKernelProperty(
    const std::string& name, const std::string& law, KernelFn kernel, int cases,
    void (*verdict)(const std::string& name, const KernelCase& c, const ReferenceAttention& exact,
                    const absl::StatusOr<Tensor>& out)) {
  return {absl::StrCat("attention/", name, "/", law), cases, [name, kernel, verdict] {
            const KernelCase c = GenSampledCase();
            Classify(c);
            RunIsolated([&] {
              const ReferenceAttention exact = reference::ComputeReferenceAttention(c.problem);
              const KernelInputs in = Inputs(c);
              verdict(name, c, exact, kernel(in.q, in.k, in.v, in.params));
            });
          }};
}

}  // namespace

AttentionComparison Check(const std::string& name, const KernelCase& c,
                          const ReferenceAttention& exact, const absl::StatusOr<Tensor>& out) {
  if (!out.ok()) RC_FAIL(absl::StrCat(name, " failed: ", out.status().ToString()));
  const reference::AttentionProblem& p = c.problem;
  const std::vector<float> actual = out->ToFloats();
  AttentionComparison comparison =
      reference::CompareAttention(actual, exact, {p.batch, p.num_heads, p.q_len, p.head_dim});
  if (!comparison.ok()) {
    const int64_t e = comparison.first_violation_element;
    RC_FAIL(absl::StrCat(name, ": ", comparison.first_violation, "\n  ",
                         DescribeRow(p, e / p.head_dim, actual[e])));
  }
  return comparison;
}

bool WithinTwiceTheBound(float a, float b, const ReferenceAttention& exact, size_t at) {
  const reference::Expectation expectation = exact.expectation[at];
  // Outside the bound's regime (inf inputs) any two answers may differ.
  if (expectation == reference::Expectation::kUnbounded ||
      expectation == reference::Expectation::kNotChecked) {
    return true;
  }
  if (expectation == reference::Expectation::kNonFinite) {
    return !std::isfinite(a) && !std::isfinite(b);
  }
  return (std::isnan(a) && std::isnan(b)) || a == b ||
         std::fabs(static_cast<double>(a) - b) <= 2 * exact.bound[at];
}

PropertySpec KernelLawProperty(const std::string& name, KernelFn kernel, int cases) {
  return SingleKernelProperty(
      name, "vs_reference", kernel, cases,
      [](const std::string& name, const KernelCase& c, const ReferenceAttention& exact,
         const absl::StatusOr<Tensor>& out) { Check(name, c, exact, out); });
}

PropertySpec PrecisionEnvelopeLawProperty(const std::string& name, KernelFn kernel, int cases) {
  return SingleKernelProperty(
      name, "precision_envelope", kernel, cases,
      [](const std::string& name, const KernelCase& c, const ReferenceAttention& exact,
         const absl::StatusOr<Tensor>& out) {
        CheckEnvelope(name, c, exact, StraightforwardAttention(c.problem), out, nullptr);
      });
}

std::vector<PropertySpec> AttentionProperties(KernelStatsMap* stats,
                                              KernelStatsMap* envelope_stats,
                                              const Subject& subject) {
  if (subject.kernels.empty()) return {};
  if (!subject.builtin) {
    return {KernelsVsReference(stats, subject), PrecisionEnvelope(envelope_stats, subject),
            DecodeEqualsPrefillLastRow(KernelRuns(subject), LimitsOf(subject)),
            BatchPermutation(subject), BadCallsRefused(subject), EmptyCalls(subject)};
  }
  // The built-in engine: decode == prefill on the kernels with a decode path of their own (flash;
  // the Metal dispatcher: tiled prefill, vector or 2-pass decode), and the laws about the flash
  // kernel's and the ring cache's internals.
  const AttentionKernel* flash = FindAttentionKernel("flash");
  const AttentionKernel* metal = FindAttentionKernel("metal");
  return {KernelsVsReference(stats, subject),
          PrecisionEnvelope(envelope_stats, subject),
          EverySimdTarget(stats),
          DecodeEqualsPrefillLastRow({{flash->name, flash, 1}, {metal->name, metal, 1}}, {}),
          ThreadsAndSplits(),
          BatchPermutation(subject),
          RingEqualsWindowedHistory(),
          BadCallsRefused(subject),
          EmptyCalls(subject)};
}

}  // namespace kvcheck::properties
