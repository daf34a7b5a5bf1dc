#include "fuzz/cache_ops_run.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/cache_ops_boundaries.h"
#include "fuzz/fuzz_support.h"
#include "properties/cache_counter_laws.h"
#include "properties/cache_machine.h"
#include "properties/cache_machine_commands.h"
#include "properties/kernel_case.h"
#include "properties/tensor_spec.h"
#include "reference/cache_model.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::fuzz {
namespace {

constexpr char kTarget[] = "cache_ops";
constexpr int kMaxOperations = 32;
constexpr size_t kMaxBranches = 3;
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
  std::set<std::string>* classes = nullptr;

  int64_t window() const { return strategy->windowed ? config.window : 0; }
  [[noreturn]] void Fail(const std::string& what) const { fuzz::Fail(kTarget, trace, what); }
  template <typename... Args>
  void Reached(bool reached, const Args&... what) {
    if (reached && classes != nullptr) classes->insert(absl::StrCat(what...));
  }
};

template <typename T, size_t N, size_t M>
T PickSmallOrLarge(Draws& in, std::string_view what, std::string_view large_what,
                   const T (&small)[N], const T (&large)[M]) {
  const int64_t byte = in.Int(what, 0, 255);
  return byte == kBoundaryByte ? in.Pick(large_what, large) : small[byte % N];
}

// Cache input of `shape`: contiguous, transposed from (B, S, KH, D), padded, or both; on a
// boundary byte, any buffer order (padded or not) or a broadcast (stride 0) along one
// dimension. Values from a seed with now and then a NaN or infinity (the laws are bit-exact
// for them too).
TensorSpec CacheInput(Run& run, Draws& in, const std::vector<int64_t>& shape,
                      std::string& described) {
  const int64_t layout = in.Int("layout", 0, 255);
  int64_t kind = -1;  // the boundary layouts: 0-3 broadcast along that dim, 4 any buffer order
  int64_t order = 0, padding = 0;
  if (layout == kBoundaryByte) {
    kind = in.Int("layout kind", 0, 4);
    if (kind == 4) {
      order = in.Int("buffer order", 0, 23);
      padding = in.Int("padding", 0, 15);
    }
  }
  const auto seed = static_cast<uint32_t>(in.Int("values seed", 0, 0xffffffff));
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  TensorSpec spec =
      TensorSpec::Contiguous(run.dtype, shape, properties::SeededValues(seed, count, 1.0f, run.dtype));
  if (kind < 0) {
    if (layout & 1) spec.buffer_order = {0, 2, 1, 3};
    if (layout & 2) {
      for (int d = 0; d < 4; ++d) {
        spec.padding[d] = (layout >> (2 + d)) & 1 ? 2 : 0;
        spec.offset[d] = spec.padding[d] / 2 + (layout >> 6 & 1);
        spec.offset[d] = std::min(spec.offset[d], spec.padding[d]);
      }
    }
    described = absl::StrCat(layout & 1 ? "transposed" : "plain", layout & 2 ? "+padded" : "");
    run.Reached(true, "layout ",
                layout & 3 ? described : "contiguous");
  } else if (kind == 4) {
    for (int64_t n = 0; n < order; ++n) {
      std::next_permutation(spec.buffer_order.begin(), spec.buffer_order.end());
    }
    for (int d = 0; d < 4; ++d) {
      spec.padding[d] = (padding >> d) & 1 ? 2 : 0;
      spec.offset[d] = spec.padding[d] / 2;
    }
    described = absl::StrCat("buffer order [", absl::StrJoin(spec.buffer_order, ","), "]",
                             padding != 0 ? "+padded" : "");
    run.Reached(true, "layout permuted");
  }
  if ((seed & 0xf) == 0 && count > 0) {
    const float specials[] = {NAN, INFINITY, -INFINITY};
    for (uint32_t n = 0; n < 1 + (seed >> 4 & 3); ++n) {
      spec.values[(seed >> (6 + 4 * n)) % count] = specials[(seed >> (20 + n)) % 3];
    }
    run.Reached(true, "NaN or infinity in K or V");
  }
  if (kind >= 0 && kind < 4) {
    // After the special values, as the generators do: they repeat along the broadcast too.
    properties::RepeatAlong(spec, static_cast<int>(kind));
    const char* dims[] = {"B", "KH", "S", "D"};
    described = absl::StrCat("broadcast ", dims[kind]);
    run.Reached(true, "layout broadcast ", dims[kind]);
  }
  absl::StrAppend(&described, " seed ", seed);
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

// The tokens a branch of `shape` may hold before an append resets it instead.
int64_t TokenBudget(const reference::CacheShape& shape) {
  const int64_t per_token = shape.batch * shape.num_kv_heads * shape.head_dim;
  return std::clamp(kMaxBranchElements / std::max<int64_t>(per_token, 1), kMinTokensPerBranch,
                    kMaxTokensPerBranch);
}

// What a prefill on a boundary byte makes the branch's longest row land on: one before, on or
// one past the initial capacity, the window (else the next growth of a geometric buffer from
// this length) or the next block boundary; or an empty prefill (S = 0).
int64_t LandingPrefill(const Run& run, Draws& in, int64_t length) {
  const int64_t landmark = in.Int("prefill lands at", 0, 3);
  if (landmark == 0) return 0;
  const int64_t offset = in.Int("prefill offset", 0, 2) - 1;
  int64_t target = 0;
  switch (landmark) {
    case 1:
      target = run.config.initial_capacity;
      break;
    case 2:
      target = run.strategy->windowed ? run.config.window
                                      : std::max(run.config.initial_capacity, 2 * length);
      break;
    default:
      target = (length / kPagedBlockTokens + 1) * kPagedBlockTokens;
      break;
  }
  return std::clamp<int64_t>(target + offset - length, 1, 96);
}

void ResetBranch(Run& run, int b) {
  run.branches[b].cache->Reset();
  run.branches[b].model.Reset();
  run.branches[b].may_share_buffers = false;
}

// What is wrong with `view`, the result of an append of no tokens to an empty cache: an empty
// view of the input's B, KH, D and dtype without positions ("" if nothing).
std::string DescribeEmptyView(const CacheView& view, const reference::CacheShape& input) {
  const Dims empty = {input.batch, input.num_kv_heads, 0, input.head_dim};
  for (const Tensor* t : {&view.k, &view.v}) {
    if (t->dtype() != input.dtype || t->shape() != empty) {
      return absl::StrCat("view of an empty append to an empty cache: ", t->DebugString());
    }
  }
  if (!view.positions.empty()) return "view of an empty append has positions";
  return "";
}

// The classes an append reached: where the branch's longest row landed.
void NoteLanding(Run& run, int64_t length, int64_t seq) {
  const int64_t capacity = run.config.initial_capacity;
  const char* offsets[] = {" - 1", "", " + 1"};
  for (int d = -1; d <= 1; ++d) {
    if (run.strategy->windowed) {
      run.Reached(length == run.config.window + d, "length at window", offsets[d + 1]);
    } else if (run.strategy->amortized_growth) {
      run.Reached(capacity >= 1 && length == capacity + d, "length at initial capacity",
                  offsets[d + 1]);
    }
    run.Reached(length >= kPagedBlockTokens - 1 && (length - d) % kPagedBlockTokens == 0,
                "length at a block boundary", offsets[d + 1]);
  }
  run.Reached(run.strategy->windowed && seq >= run.config.window, "chunk of at least the window");
  run.Reached(run.strategy->windowed && length > run.config.window, "wrap");
}

enum class AppendKind { kPrefill, kDecode, kGrow };

void Append(Run& run, Draws& in, int b, AppendKind kind) {
  Branch& branch = run.branches[b];
  const bool fixed = branch.model.shape().has_value();
  const reference::CacheShape shape = fixed ? *branch.model.shape() : run.dims[in.Bool("first dims")];
  const int64_t length = MaxAppended(branch.model);
  int64_t seq = 1;
  switch (kind) {
    case AppendKind::kPrefill: {
      const int64_t byte = in.Int("prefill S", 0, 255);
      seq = byte == kBoundaryByte ? LandingPrefill(run, in, length) : 2 + byte % 23;
      break;
    }
    case AppendKind::kDecode:
      break;
    case AppendKind::kGrow:
      seq = std::max(run.config.initial_capacity, 2 * length) - length + 1 +
            in.Int("grow past", 0, 3);
      seq = std::clamp<int64_t>(seq, 1, 96);
      break;
  }
  if (length + seq > TokenBudget(shape)) {
    run.trace.Add("Reset(branch ", b, ") [token budget]");
    run.Reached(true, "token budget reset");
    ResetBranch(run, b);
    CheckAll(run, b);
    return;
  }
  const std::vector<int64_t> dims = {shape.batch, shape.num_kv_heads, seq, shape.head_dim};
  std::string k_layout, v_layout;
  const TensorSpec k_spec = CacheInput(run, in, dims, k_layout);
  const TensorSpec v_spec = CacheInput(run, in, dims, v_layout);
  std::vector<uint8_t> active_bytes;  // std::vector<bool> has no data() for a Span
  if (run.strategy->per_row && in.Bool("active flags")) {
    const int64_t flags = in.Int("active rows", 0, 255);
    for (int64_t row = 0; row < shape.batch; ++row) active_bytes.push_back(flags >> row & 1);
  }
  const std::unique_ptr<bool[]> active(new bool[active_bytes.size() + 1]);
  for (size_t row = 0; row < active_bytes.size(); ++row) active[row] = active_bytes[row] != 0;
  const absl::Span<const bool> active_span(active.get(), active_bytes.size());
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
  // An empty append is a no-op, also on an empty cache, where it fixes no shape and returns an
  // empty view of the input's B, KH, D and dtype.
  if (seq > 0) branch.model.Append(shape, seq, SpecBits(k_spec), SpecBits(v_spec), active_span);
  const std::string mismatch =
      seq == 0 && !fixed ? DescribeEmptyView(*view, shape)
                         : properties::DescribeViewMismatch(*view, branch.model, run.dtype,
                                                            run.strategy->per_row, "returned view");
  if (!mismatch.empty()) run.Fail(mismatch);
  branch.saved = SavedView{*view, view->k.ToBits(), view->v.ToBits()};
  CheckAll(run, b);

  const char* kind_names[] = {"prefill", "decode", "grow"};
  run.Reached(seq > 0, kind_names[static_cast<int>(kind)]);
  run.Reached(seq == 0, "empty prefill");
  run.Reached(seq == 0 && !fixed, "empty prefill on an empty cache");
  run.Reached(std::count(active_bytes.begin(), active_bytes.end(), 0) > 0, "inactive rows");
  run.Reached(!active_bytes.empty() && std::count(active_bytes.begin(), active_bytes.end(), 0) ==
                                           static_cast<int64_t>(active_bytes.size()),
              "every row inactive");
  run.Reached(true, "batch ", shape.batch);
  run.Reached(true, "kv_heads ", shape.num_kv_heads);
  run.Reached(true, "head_dim ", shape.head_dim);
  run.Reached(!run.strategy->windowed && run.strategy->amortized_growth && capacity_before > 0 &&
                  branch.cache->capacity() > capacity_before,
              "growth");
  if (seq > 0) NoteLanding(run, MaxAppended(branch.model), seq);
}

Tensor Filled(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> t = Tensor::Filled(dtype, shape, 1.0f);
  return t.ok() ? *std::move(t) : Tensor();
}

// An append the contract rejects: it must fail with the contract's code and change nothing.
void BadAppend(Run& run, Draws& in, int b) {
  Branch& branch = run.branches[b];
  const bool fixed = branch.model.shape().has_value();
  reference::CacheShape shape = fixed ? *branch.model.shape() : run.dims[0];
  std::vector<int64_t> dims = {shape.batch, shape.num_kv_heads, 1, shape.head_dim};
  const int64_t kind = in.Int("bad append", 0, fixed ? 6 : 3);
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
      dims[in.Bool("zero dim is B") ? 0 : 3] = 0;
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
  run.Reached(true, "bad append ", what);
}

// One choice of (B, KH, D) for first appends: 1 or 2 rows and KV heads and a small head
// size, or on a boundary byte any of the generators' sizes, B * KH * D bounded as they bound
// it.
reference::CacheShape DrawDims(Draws& in, DType dtype) {
  reference::CacheShape dims;
  dims.batch = in.Int("batch", 1, 2);
  dims.num_kv_heads = in.Int("kv heads", 1, 2);
  const int64_t byte = in.Int("head_dim", 0, 255);
  if (byte == kBoundaryByte) {
    dims.head_dim = in.Pick("boundary head_dim", kCacheHeadDims);
    dims.batch = in.Pick("boundary batch", kCacheBatches);
    dims.num_kv_heads = in.Pick("boundary kv heads", kCacheKvHeads);
    while (dims.batch * dims.num_kv_heads * dims.head_dim > kMaxTokenElements &&
           dims.head_dim > 8) {
      dims.head_dim /= 2;
    }
  } else {
    dims.head_dim = kCacheSmallHeadDims[byte % std::size(kCacheSmallHeadDims)];
  }
  dims.dtype = dtype;
  return dims;
}

}  // namespace

std::vector<std::string> RunCacheOps(Draws& in, const std::vector<const CacheStrategy*>& strategies,
                                     std::set<std::string>* classes) {
  Run run;
  run.classes = classes;
  run.strategy = strategies[in.Int("strategy", 0, static_cast<int64_t>(strategies.size()) - 1)];
  run.dtype = in.Pick("dtype", kAllDTypes);
  run.config = run.strategy->default_config;
  run.config.initial_capacity = PickSmallOrLarge(in, "initial capacity", "large initial capacity",
                                                 kCacheSmallCapacities, kCacheLargeCapacities);
  if (run.strategy->windowed) {
    run.config.window = PickSmallOrLarge(in, "window", "large window", kCacheSmallWindows,
                                         kCacheLargeWindows);
  }
  for (reference::CacheShape& dims : run.dims) dims = DrawDims(in, run.dtype);
  run.trace.Add("strategy ", run.strategy->name, ", ", DTypeName(run.dtype), ", initial_capacity ",
                run.config.initial_capacity, ", window ", run.config.window);
  run.Reached(true, "strategy ", run.strategy->name);
  run.Reached(true, "dtype ", DTypeName(run.dtype));
  run.Reached(true, "initial capacity ", run.config.initial_capacity);
  run.Reached(run.strategy->windowed, "window ", run.config.window);
  absl::StatusOr<std::unique_ptr<KvCache>> cache = run.strategy->create(run.config);
  if (!cache.ok()) run.Fail(absl::StrCat("create failed: ", cache.status().ToString()));
  run.branches.push_back(Branch{*std::move(cache), reference::CacheModel(run.window()), {}, {}});
  run.branches.back().seen = properties::ObserveCounters(*run.branches.back().cache);

  for (int op = 0; op < kMaxOperations && in.More("operation"); ++op) {
    const int64_t kind = in.Int("operation", 0, 7);
    const int b =
        static_cast<int>(in.Int("branch", 0, static_cast<int64_t>(run.branches.size()) - 1));
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
        ResetBranch(run, b);
        if (run.branches[b].cache->seq_len() != 0) run.Fail("seq_len after Reset is not 0");
        CheckAll(run, b);
        run.Reached(true, "reset");
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
          run.Reached(true, "fork");
        }
        break;
      default:
        BadAppend(run, in, b);
        break;
    }
  }
  return run.trace.lines();
}

std::vector<std::string> CacheOpsSeedClasses() {
  std::vector<std::string> classes;
  for (const CacheStrategy& strategy : CacheStrategies()) {
    classes.push_back(absl::StrCat("strategy ", strategy.name));
  }
  for (DType dtype : kAllDTypes) classes.push_back(absl::StrCat("dtype ", DTypeName(dtype)));
  for (int64_t d : kCacheHeadDims) classes.push_back(absl::StrCat("head_dim ", d));
  for (int64_t b : kCacheBatches) classes.push_back(absl::StrCat("batch ", b));
  for (int64_t h : kCacheKvHeads) classes.push_back(absl::StrCat("kv_heads ", h));
  for (int64_t c : kCacheSmallCapacities) classes.push_back(absl::StrCat("initial capacity ", c));
  for (int64_t c : kCacheLargeCapacities) classes.push_back(absl::StrCat("initial capacity ", c));
  for (int64_t w : kCacheSmallWindows) classes.push_back(absl::StrCat("window ", w));
  for (int64_t w : kCacheLargeWindows) classes.push_back(absl::StrCat("window ", w));
  for (const char* layout : {"contiguous", "transposed", "plain+padded", "transposed+padded",
                             "permuted", "broadcast B", "broadcast KH", "broadcast S",
                             "broadcast D"}) {
    classes.push_back(absl::StrCat("layout ", layout));
  }
  classes.insert(classes.end(),
                 {"NaN or infinity in K or V", "prefill", "empty prefill",
                  "empty prefill on an empty cache", "decode", "grow", "growth", "reset", "fork",
                  "token budget reset", "inactive rows", "every row inactive"});
  for (const char* what : {"rank 3", "k/v shapes differ", "zero-size dimension", "overflowing S",
                           "wrong dtype", "wrong head_dim", "wrong batch"}) {
    classes.push_back(absl::StrCat("bad append ", what));
  }
  for (const char* landmark : {"initial capacity", "window", "a block boundary"}) {
    for (const char* offset : {" - 1", "", " + 1"}) {
      classes.push_back(absl::StrCat("length at ", landmark, offset));
    }
  }
  classes.insert(classes.end(), {"chunk of at least the window", "wrap"});
  return classes;
}

}  // namespace kvcheck::fuzz
