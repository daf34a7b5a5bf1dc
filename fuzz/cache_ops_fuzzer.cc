// cache_ops: bytes -> a cache strategy, a configuration and a sequence of cache operations
// (prefill, decode, grow, reset, fork, bad appends), run against the exact history model
// (reference/cache_model.h) after every operation, the way the state machine does:
//   - every branch shows exactly its model's visible set (positions and K/V bits);
//   - row lengths match; views returned earlier keep their bits (clone law);
//   - growth copies at most 3x the appended bytes (amortised strategies);
//   - the counter laws (properties/cache_counter_laws.h) hold from one check to the next;
//   - a bad append fails with the contract's code and changes nothing.
// Any divergence aborts with the decoded operations; sanitizer reports are crashes too.
//
// KVCHECK_FUZZ_DEFECT=<cache defect> fuzzes that defect's strategy instead of the registry.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/engine_under_fuzz.h"
#include "fuzz/fuzz_support.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "properties/cache_counter_laws.h"
#include "properties/cache_machine.h"
#include "properties/cache_machine_commands.h"
#include "properties/kernel_case.h"
#include "properties/tensor_spec.h"
#include "reference/cache_model.h"
#include "src/cache/registry.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::fuzz {
namespace {

constexpr char kTarget[] = "cache_ops";
constexpr int kMaxOperations = 32;
constexpr size_t kMaxBranches = 3;
// Past this many tokens in a branch an append becomes a reset: inputs stay fast.
constexpr int64_t kMaxTokensPerBranch = 256;

using properties::SavedView;
using properties::TensorSpec;
using properties::cache_machine::SpecBits;

struct Branch {
  std::unique_ptr<KvCache> cache;
  reference::CacheModel model;
  std::optional<SavedView> saved;  // the last view this branch returned
  // Its counters at the last check, and whether a Fork since its last Reset may share its
  // buffers (the counter laws).
  properties::CounterObservation seen;
  bool may_share_buffers = false;
};

struct Run {
  const CacheStrategy* strategy = nullptr;
  CacheConfig config;
  DType dtype = DType::kF32;
  reference::CacheShape dims[2];  // choices for the first append after construction or reset
  std::vector<Branch> branches;
  Trace trace;

  int64_t window() const { return strategy->windowed ? config.window : 0; }
  [[noreturn]] void Fail(const std::string& what) const { fuzz::Fail(kTarget, trace, what); }
};

std::vector<const CacheStrategy*> StrategiesUnderFuzz() {
  if (const defects::Defect* defect = DefectUnderFuzz(defects::DefectKind::kCache)) {
    return {&defect->strategy};
  }
  std::vector<const CacheStrategy*> all;
  if (const FuzzedEngine* engine = EngineUnderFuzz()) {
    for (const CacheStrategy& strategy : engine->strategies) all.push_back(&strategy);
    return all;
  }
  for (const CacheStrategy& strategy : CacheStrategies()) all.push_back(&strategy);
  return all;
}

// Cache input of `shape`: contiguous, transposed from (B, S, KH, D), padded, or both; values
// from a seed with now and then a NaN or infinity (the laws are bit-exact for them too).
TensorSpec CacheInput(FuzzedDataProvider& in, DType dtype, const std::vector<int64_t>& shape,
                      std::string& described) {
  const uint8_t layout = in.ConsumeIntegral<uint8_t>();
  const uint32_t seed = in.ConsumeIntegral<uint32_t>();
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  TensorSpec spec =
      TensorSpec::Contiguous(dtype, shape, properties::SeededValues(seed, count, 1.0f, dtype));
  if (layout & 1) spec.buffer_order = {0, 2, 1, 3};
  if (layout & 2) {
    for (int d = 0; d < 4; ++d) {
      spec.padding[d] = (layout >> (2 + d)) & 1 ? 2 : 0;
      spec.offset[d] = spec.padding[d] / 2 + (layout >> 6 & 1);
      spec.offset[d] = std::min(spec.offset[d], spec.padding[d]);
    }
  }
  if ((seed & 0xf) == 0 && count > 0) {
    const float specials[] = {NAN, INFINITY, -INFINITY};
    for (uint32_t n = 0; n < 1 + (seed >> 4 & 3); ++n) {
      spec.values[(seed >> (6 + 4 * n)) % count] = specials[(seed >> (20 + n)) % 3];
    }
  }
  described = absl::StrCat(layout & 1 ? "transposed" : "plain", layout & 2 ? "+padded" : "",
                           " seed ", seed);
  return spec;
}

// Every check of the state machine (properties/cache_machine_checks.cc), as a fuzz failure;
// `acted`: the branch the operation acted on (-1: none).
void CheckAll(Run& run, int acted) {
  for (size_t i = 0; i < run.branches.size(); ++i) {
    Branch& branch = run.branches[i];
    const absl::StatusOr<CacheView> view = branch.cache->View();
    if (!view.ok()) run.Fail(absl::StrCat("branch ", i, " View failed: ", view.status().ToString()));
    const std::string mismatch = properties::DescribeViewMismatch(
        *view, branch.model, run.dtype, run.strategy->per_row, absl::StrCat("branch ", i));
    if (!mismatch.empty()) run.Fail(mismatch);
    const int64_t rows = branch.model.shape().has_value() ? branch.model.shape()->batch : 1;
    for (int64_t b = 0; b < rows; ++b) {
      if (branch.cache->row_seq_len(b) != branch.model.appended(b)) {
        run.Fail(absl::StrCat("branch ", i, " row ", b, " length ", branch.cache->row_seq_len(b),
                              ", model ", branch.model.appended(b)));
      }
    }
    const bool own_slots_reused = run.strategy->windowed && static_cast<int>(i) == acted;
    if (branch.saved.has_value() && !own_slots_reused &&
        (branch.saved->view.k.ToBits() != branch.saved->k_bits ||
         branch.saved->view.v.ToBits() != branch.saved->v_bits)) {
      run.Fail(absl::StrCat("a view branch ", i,
                            " returned earlier changed after an operation on "
                            "branch ",
                            acted));
    }
    if (run.strategy->amortized_growth) {
      const CacheCounters& c = branch.cache->counters();
      if (c.bytes_growth_copied > 3 * c.bytes_appended) {
        run.Fail(absl::StrCat("growth law: branch ", i, " copied ", c.bytes_growth_copied,
                              " bytes growing for ", c.bytes_appended, " bytes appended"));
      }
    }
    if (run.strategy->reports_storage) {
      const properties::CounterObservation now = properties::ObserveCounters(*branch.cache);
      const std::string broken =
          properties::DescribeCounterLawBreak(branch.seen, now,
                                              {.acted = static_cast<int>(i) == acted,
                                               .amortized_growth = run.strategy->amortized_growth,
                                               .may_share_buffers = branch.may_share_buffers});
      if (!broken.empty()) run.Fail(absl::StrCat("branch ", i, " counters: ", broken));
      branch.seen = now;
    }
  }
}

int64_t MaxAppended(const reference::CacheModel& model) {
  return properties::cache_machine::MaxAppended(model);
}

enum class AppendKind { kPrefill, kDecode, kGrow };

void Append(Run& run, FuzzedDataProvider& in, int b, AppendKind kind) {
  Branch& branch = run.branches[b];
  const reference::CacheShape shape =
      branch.model.shape().has_value() ? *branch.model.shape() : run.dims[in.ConsumeBool()];
  const int64_t length = MaxAppended(branch.model);
  int64_t seq = 1;
  switch (kind) {
    case AppendKind::kPrefill:
      seq = in.ConsumeIntegralInRange<int64_t>(2, 24);
      break;
    case AppendKind::kDecode:
      break;
    case AppendKind::kGrow:
      seq = std::max(run.config.initial_capacity, 2 * length) - length + 1 +
            in.ConsumeIntegralInRange<int64_t>(0, 3);
      seq = std::clamp<int64_t>(seq, 1, 96);
      break;
  }
  if (length + seq > kMaxTokensPerBranch) {
    run.trace.Add("Reset(branch ", b, ") [token budget]");
    branch.cache->Reset();
    branch.model.Reset();
    branch.may_share_buffers = false;
    CheckAll(run, b);
    return;
  }
  const std::vector<int64_t> dims = {shape.batch, shape.num_kv_heads, seq, shape.head_dim};
  std::string k_layout, v_layout;
  const TensorSpec k_spec = CacheInput(in, run.dtype, dims, k_layout);
  const TensorSpec v_spec = CacheInput(in, run.dtype, dims, v_layout);
  std::vector<uint8_t> active_bytes;  // std::vector<bool> has no data() for a Span
  if (run.strategy->per_row && in.ConsumeBool()) {
    const uint8_t flags = in.ConsumeIntegral<uint8_t>();
    for (int64_t row = 0; row < shape.batch; ++row) active_bytes.push_back(flags >> row & 1);
  }
  const bool active[3] = {active_bytes.size() > 0 && active_bytes[0] != 0,
                          active_bytes.size() > 1 && active_bytes[1] != 0,
                          active_bytes.size() > 2 && active_bytes[2] != 0};
  const absl::Span<const bool> active_span(active, active_bytes.size());
  const char* names[] = {"Prefill", "Decode", "Grow"};
  run.trace.Add(
      names[static_cast<int>(kind)], "(branch ", b, ", ", DTypeName(run.dtype), " B=", shape.batch,
      " KH=", shape.num_kv_heads, " S=", seq, " D=", shape.head_dim, ", k ", k_layout, ", v ",
      v_layout,
      active_bytes.empty() ? "" : absl::StrCat(", active [", absl::StrJoin(active_bytes, ","), "]"),
      ")");
  absl::StatusOr<Tensor> k = properties::Materialize(k_spec);
  absl::StatusOr<Tensor> v = properties::Materialize(v_spec);
  if (!k.ok() || !v.ok()) run.Fail("could not build the input tensors");
  const int64_t capacity_before = branch.cache->capacity();
  absl::StatusOr<CacheView> view = active_span.empty()
                                       ? branch.cache->Append(*k, *v)
                                       : branch.cache->AppendActive(*k, *v, active_span);
  if (!view.ok()) {
    run.Fail(
        absl::StrCat("append failed (capacity ", capacity_before, "): ", view.status().ToString()));
  }
  branch.model.Append(shape, seq, SpecBits(k_spec), SpecBits(v_spec), active_span);
  const std::string mismatch = properties::DescribeViewMismatch(
      *view, branch.model, run.dtype, run.strategy->per_row, "returned view");
  if (!mismatch.empty()) run.Fail(mismatch);
  branch.saved = SavedView{*view, view->k.ToBits(), view->v.ToBits()};
  CheckAll(run, b);
}

Tensor Filled(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> t = Tensor::Filled(dtype, shape, 1.0f);
  return t.ok() ? *std::move(t) : Tensor();
}

// An append the contract rejects: it must fail with the contract's code and change nothing.
void BadAppend(Run& run, FuzzedDataProvider& in, int b) {
  Branch& branch = run.branches[b];
  const bool fixed = branch.model.shape().has_value();
  reference::CacheShape shape = fixed ? *branch.model.shape() : run.dims[0];
  std::vector<int64_t> dims = {shape.batch, shape.num_kv_heads, 1, shape.head_dim};
  const int kind = in.ConsumeIntegralInRange(0, fixed ? 6 : 3);
  absl::StatusCode expected = absl::StatusCode::kInvalidArgument;
  Tensor k, v;
  const char* what = "";
  switch (kind) {
    case 0:
      what = "rank 3";
      k = v = Filled(run.dtype, {shape.batch, shape.num_kv_heads, shape.head_dim});
      break;
    case 1: {
      what = "k/v shapes differ";
      k = Filled(run.dtype, dims);
      dims[2] = 2;
      v = Filled(run.dtype, dims);
      break;
    }
    case 2:
      what = "zero-size dimension";
      dims[in.ConsumeBool() ? 0 : 3] = 0;
      k = v = Filled(run.dtype, dims);
      break;
    case 3:
      what = "overflowing S";
      // A (B, KH, 2^41, D) view with stride 0 along S: no memory, but too many tokens.
      k = v = Filled(run.dtype, dims);
      {
        absl::StatusOr<Layout> layout =
            Layout::Strided({dims[0], dims[1], kMaxSequenceLength * 2, dims[3]},
                            {dims[1] * dims[3], dims[3], 0, 1}, 0);
        if (!layout.ok()) run.Fail("could not build a stride-0 layout");
        absl::StatusOr<Tensor> view = Tensor::View(k.storage(), *layout);
        if (!view.ok()) run.Fail("could not build a stride-0 view");
        k = v = *view;
      }
      expected = absl::StatusCode::kOutOfRange;
      break;
    case 4:
      what = "wrong dtype";
      k = v = Filled(run.dtype == DType::kF32 ? DType::kBF16 : DType::kF32, dims);
      expected = absl::StatusCode::kFailedPrecondition;
      break;
    case 5:
      what = "wrong head_dim";
      dims[3] += 1;
      k = v = Filled(run.dtype, dims);
      expected = absl::StatusCode::kFailedPrecondition;
      break;
    default:
      what = "wrong batch";
      dims[0] += 1;
      k = v = Filled(run.dtype, dims);
      expected = absl::StatusCode::kFailedPrecondition;
      break;
  }
  run.trace.Add("BadAppend(branch ", b, ", ", what, ")");
  const int64_t capacity = branch.cache->capacity();
  const CacheCounters counters = branch.cache->counters();
  const absl::StatusOr<CacheView> view = branch.cache->Append(k, v);
  if (view.ok()) run.Fail(absl::StrCat("append with ", what, " succeeded"));
  if (view.status().code() != expected) {
    run.Fail(absl::StrCat("append with ", what, " failed with ", view.status().ToString(),
                          "; the contract says ", absl::StatusCodeToString(expected)));
  }
  const CacheCounters& after = branch.cache->counters();
  if (branch.cache->capacity() != capacity || after.bytes_allocated != counters.bytes_allocated ||
      after.bytes_appended != counters.bytes_appended ||
      after.bytes_growth_copied != counters.bytes_growth_copied) {
    run.Fail(absl::StrCat("a failed append (", what, ") changed the capacity or counters"));
  }
  CheckAll(run, -1);
}

int FuzzOne(const uint8_t* data, size_t size) {
  static const std::vector<const CacheStrategy*> strategies = StrategiesUnderFuzz();
  FuzzedDataProvider in(data, size);
  Run run;
  run.strategy = strategies[in.ConsumeIntegralInRange<size_t>(0, strategies.size() - 1)];
  run.dtype = Pick(in, kAllDTypes);
  run.config = run.strategy->default_config;
  run.config.initial_capacity = Pick<int64_t>(in, {0, 1, 2, 3, 4, 8, 16});
  if (run.strategy->windowed) run.config.window = Pick<int64_t>(in, {1, 2, 3, 4, 5, 8, 13});
  for (reference::CacheShape& dims : run.dims) {
    dims.batch = in.ConsumeIntegralInRange<int64_t>(1, 2);
    dims.num_kv_heads = in.ConsumeIntegralInRange<int64_t>(1, 2);
    dims.head_dim = Pick<int64_t>(in, {1, 2, 3, 5, 8});
    dims.dtype = run.dtype;
  }
  run.trace.Add("strategy ", run.strategy->name, ", ", DTypeName(run.dtype), ", initial_capacity ",
                run.config.initial_capacity, ", window ", run.config.window);
  absl::StatusOr<std::unique_ptr<KvCache>> cache = run.strategy->create(run.config);
  if (!cache.ok()) run.Fail(absl::StrCat("create failed: ", cache.status().ToString()));
  run.branches.push_back(Branch{*std::move(cache), reference::CacheModel(run.window()), {}, {}});
  run.branches.back().seen = properties::ObserveCounters(*run.branches.back().cache);

  for (int op = 0; op < kMaxOperations && in.remaining_bytes() > 0; ++op) {
    const int kind = in.ConsumeIntegralInRange(0, 7);
    const int b = in.ConsumeIntegralInRange<int>(0, static_cast<int>(run.branches.size()) - 1);
    switch (kind) {
      case 0:
        Append(run, in, b, AppendKind::kPrefill);
        break;
      case 1:
      case 2:
        Append(run, in, b, AppendKind::kDecode);
        break;
      case 3:
        Append(run, in, b, AppendKind::kGrow);
        break;
      case 4:
        run.trace.Add("Reset(branch ", b, ")");
        run.branches[b].cache->Reset();
        run.branches[b].model.Reset();
        run.branches[b].may_share_buffers = false;
        if (run.branches[b].cache->seq_len() != 0) run.Fail("seq_len after Reset is not 0");
        CheckAll(run, b);
        break;
      case 5:
        if (run.branches.size() < kMaxBranches) {
          run.trace.Add("Fork(branch ", b, " -> branch ", run.branches.size(), ")");
          // The new branch starts from its parent's counters; the Fork acts on it alone.
          run.branches[b].may_share_buffers = true;
          Branch fork{run.branches[b].cache->Fork(), run.branches[b].model, run.branches[b].saved,
                      run.branches[b].seen, true};
          run.branches.push_back(std::move(fork));
          CheckAll(run, static_cast<int>(run.branches.size()) - 1);
        }
        break;
      default:
        BadAppend(run, in, b);
        break;
    }
  }
  return 0;
}

}  // namespace
}  // namespace kvcheck::fuzz

// Resolves KVCHECK_FUZZ_DEFECT before the first input (an unknown name exits with the list).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kvcheck::fuzz::DefectUnderFuzz(kvcheck::defects::DefectKind::kCache);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::FuzzOne(data, size);
}
