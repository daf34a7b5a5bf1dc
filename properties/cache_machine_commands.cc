// Helpers and the append, reset and fork commands of the cache state machine.
#include "properties/cache_machine_commands.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/generators.h"
#include "rapidcheck.h"

namespace kvcheck::properties::cache_machine {
namespace {

thread_local std::set<std::string>* current_events = nullptr;

// Cache contents: finite values from a seed (the bits matter, not which values: the laws are
// bit-exact), and now and then a few NaN/inf; plain, transposed or hostile layouts.
// One draw whose inner draws are the same whatever they give: shrinking K's layout never
// redraws V (command arguments shrink draw by draw, in order, redrawing what follows).
TensorSpec GenCacheInput(DType dtype, std::vector<int64_t> shape) {
  return *rc::gen::exec([dtype, shape] {
    const int layout = *Uniform(0, 4);
    const LayoutDraw hostile = *GenLayoutDraw();
    const int broadcast_dim = *Choice(1, 0, 2, 3);
    const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
    const bool specials = *Uniform(0, 8) == 7;  // shrinks to no special values
    const auto positions = *rc::gen::container<std::vector<std::pair<int64_t, int>>>(
        *Uniform<size_t>(1, 4),
        rc::gen::pair(Uniform<int64_t>(0, int64_t{1} << 20), Uniform(0, 3)));
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    TensorSpec spec = TensorSpec::Contiguous(dtype, shape, SeededElements(seed, count, dtype));
    if (layout == 1) spec.buffer_order = {0, 2, 1, 3};  // (B, S, KH, D).transpose(1, 2)
    if (layout == 2) spec = ApplyLayout(std::move(spec), hostile);
    if (!spec.values.empty() && specials) {
      for (const auto& [fraction, which] : positions) {
        spec.values[fraction * count >> 20] = which == 0 ? NAN : which == 1 ? INFINITY : -INFINITY;
      }
    }
    // A broadcast (stride 0) along B, KH, S or D, as expand() makes (KV heads repeated for
    // GQA, one prompt for every batch row): the values repeat, the buffer holds one element.
    if (layout == 3) RepeatAlong(spec, broadcast_dim);
    return spec;
  });
}

// What is wrong with `view`, the result of an append of no tokens to an empty cache, which
// must be an empty view of the input's B, KH, D and dtype without positions ("" if nothing).
std::string DescribeEmptyView(const CacheView& view, const reference::CacheShape& input,
                              const char* what) {
  const Dims empty = {input.batch, input.num_kv_heads, 0, input.head_dim};
  for (const Tensor* t : {&view.k, &view.v}) {
    if (t->dtype() != input.dtype || t->shape() != empty) {
      return absl::StrCat(what, " of an empty append to an empty cache: ", t->DebugString());
    }
  }
  if (!view.positions.empty()) return absl::StrCat(what, " of an empty append has positions");
  return "";
}

// Every byte of t's storage set to 0xFF: NaN in f32, f16 and bf16.
void OverwriteWithNaN(const Tensor& t) {
  if (t.storage() == nullptr) return;
  std::memset(t.storage()->bytes(), 0xFF, static_cast<size_t>(t.storage()->num_bytes()));
}

}  // namespace

EventScope::EventScope(std::set<std::string>* events) { current_events = events; }
EventScope::~EventScope() { current_events = nullptr; }

void NoteEvent(bool happened, const char* event) {
  if (happened && current_events != nullptr) current_events->insert(event);
}

std::vector<uint32_t> SpecBits(const TensorSpec& spec) {
  std::vector<uint32_t> bits;
  bits.reserve(spec.values.size());
  for (float x : spec.values) bits.push_back(BitsOf(x, spec.dtype));
  return bits;
}

uint32_t BitsOf(float value, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return F32ToF16Bits(value);
    case DType::kBF16:
      return F32ToBF16Bits(value);
    case DType::kF32:
      break;
  }
  return std::bit_cast<uint32_t>(value);
}

float FloatOf(uint32_t bits, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return F16BitsToF32(static_cast<uint16_t>(bits));
    case DType::kBF16:
      return BF16BitsToF32(static_cast<uint16_t>(bits));
    case DType::kF32:
      break;
  }
  return std::bit_cast<float>(bits);
}

int64_t MaxAppended(const reference::CacheModel& model) {
  int64_t n = 0;
  const int64_t rows = model.shape().has_value() ? model.shape()->batch : 0;
  for (int64_t b = 0; b < rows; ++b) n = std::max(n, model.appended(b));
  return n;
}

void RequireBranch(const Model& m, int branch) {
  RC_PRE(branch >= 0 && branch < static_cast<int>(m.branches.size()));
}

void RequireBranchShape(const Model& m, int branch, const reference::CacheShape& shape) {
  RequireBranch(m, branch);
  const std::optional<reference::CacheShape>& fixed = m.branches[branch].model.shape();
  RC_PRE(!fixed.has_value() || *fixed == shape);
}

int PickBranch(const Model& m) { return *Uniform<int>(0, static_cast<int>(m.branches.size())); }

AppendTokens::AppendTokens(const Model& m, Kind kind) : kind_(kind), branch_(PickBranch(m)) {
  // Every draw below happens whatever the others give (see GenCacheInput).
  const reference::CacheModel& branch = m.branches[branch_].model;
  const MachineDims& first = m.dims[*Uniform<size_t>(0, m.dims.size())];
  shape_ = branch.shape().has_value()
               ? *branch.shape()
               : reference::CacheShape{first.batch, first.num_kv_heads, first.head_dim, m.dtype};
  const int64_t length = MaxAppended(branch);
  // One prefill in ten is empty (S = 0: a no-op, which fixes no shape on an empty cache).
  const bool empty = *Uniform(0, 10) == 9;
  const int64_t prefill = *Uniform<int64_t>(2, 25);
  const int64_t past = *Uniform<int64_t>(0, 4);
  switch (kind) {
    case Kind::kPrefill:
      seq_ = empty ? 0 : prefill;
      break;
    case Kind::kDecode:
      seq_ = 1;
      break;
    case Kind::kGrow:
      // Past any capacity a geometric strategy can have at this length.
      seq_ = std::max(m.config.initial_capacity, 2 * length) - length + 1 + past;
      seq_ = std::clamp<int64_t>(seq_, 1, 96);
      break;
  }
  const std::vector<int64_t> dims = {shape_.batch, shape_.num_kv_heads, seq_, shape_.head_dim};
  k_ = GenCacheInput(m.dtype, dims);
  v_ = GenCacheInput(m.dtype, dims);
  // Shrinks to every row active (no flags). With flags: some rows inactive on a per-row
  // strategy; every row active, spelled out, on the others (which must take that).
  const std::vector<bool> active = *rc::gen::exec([rows = shape_.batch, per_row = m.strategy->per_row] {
    std::vector<bool> active;
    const bool flags = *Uniform(0, 2) == 1;
    const auto inactive = *rc::gen::container<std::vector<int>>(rows, Uniform(0, 3));
    for (int64_t b = 0; flags && b < rows; ++b) active.push_back(!per_row || inactive[b] != 2);
    return active;
  });
  active_.assign(active.begin(), active.end());
  into_kept_view_ = *Uniform(0, 2) == 1;  // shrinks to Append
}

void AppendTokens::checkPreconditions(const Model& m) const {
  RequireBranchShape(m, branch_, shape_);
}

void AppendTokens::apply(Model& m) const {
  if (seq_ == 0) return;  // a no-op, also on an empty cache (it fixes no shape)
  MachineBranch& branch = m.branches[branch_];
  branch.model.Append(shape_, seq_, SpecBits(k_), SpecBits(v_),
                      absl::Span<const bool>(active_.data(), active_.size()));
  const int64_t rows =
      active_.empty() ? shape_.batch : std::count(active_.begin(), active_.end(), true);
  branch.bytes_appended +=
      2 * rows * shape_.num_kv_heads * seq_ * shape_.head_dim * DTypeSize(shape_.dtype);
  branch.reused_after_reset = branch.was_reset;
  branch.was_reset = false;
}

void AppendTokens::run(const Model& m0, Sut& sut) const {
  KvCache& cache = *sut.caches[branch_];
  const int64_t capacity_before = cache.capacity();
  absl::StatusOr<Tensor> k = Materialize(k_);
  absl::StatusOr<Tensor> v = Materialize(v_);
  RC_ASSERT(k.ok() && v.ok());
  const absl::Span<const bool> active(active_.data(), active_.size());
  absl::StatusOr<CacheView> view;
  if (into_kept_view_) {
    CacheView& kept = sut.kept_views[branch_];
    const absl::Status status = active_.empty() ? cache.AppendInto(*k, *v, kept)
                                                : cache.AppendActiveInto(*k, *v, active, kept);
    if (!status.ok()) RC_FAIL(absl::StrCat("append into the kept view failed: ", status.ToString()));
    view = kept;  // a copy: the saved view below must not follow the kept one
  } else {
    view = active_.empty() ? cache.Append(*k, *v) : cache.AppendActive(*k, *v, active);
  }
  if (!view.ok()) RC_FAIL(absl::StrCat("append failed: ", view.status().ToString()));
  const Model m = nextState(m0);
  const reference::CacheModel& branch = m.branches[branch_].model;
  // An empty append to an empty cache fixes no shape (the model has none to compare with):
  // it returns an empty view of the input's B, KH, D and dtype.
  const bool empty_on_empty = seq_ == 0 && !branch.shape().has_value();
  NoteEvent(empty_on_empty, "empty append to an empty cache");
  auto describe = [&](const char* what) {
    return empty_on_empty
               ? DescribeEmptyView(*view, shape_, what)
               : DescribeViewMismatch(*view, branch, m.dtype, m.strategy->per_row, what);
  };
  const std::string mismatch = describe("returned view");
  if (!mismatch.empty()) RC_FAIL(mismatch);
  // The caller owns its k and v and may reuse them at once (a decode loop writes every step's
  // K and V into the same scratch): no view may change when it does. Overwritten with NaN
  // bits, the inputs would show through any view that still reads them (CheckMachine below
  // looks at every branch).
  OverwriteWithNaN(*k);
  OverwriteWithNaN(*v);
  const std::string kept_input = describe(
      "returned view, after the caller overwrote the k and v it had appended (the cache still "
      "reads the caller's buffers)");
  if (!kept_input.empty()) RC_FAIL(kept_input);
  // The branch's previous view first: this append must not have changed it (a window cache
  // excepted, which reuses its slots). Then the new one is kept for the commands after.
  CheckMachine(m, sut, branch_);
  sut.last_views[branch_] = SavedView{*view, view->k.ToBits(), view->v.ToBits()};

  const int64_t window = m.window();
  const int64_t length = MaxAppended(branch);
  NoteEvent(window > 0 && length > window, "wrap");
  NoteEvent(window > 0 && length == window, "exact fill (len == W)");
  NoteEvent(window > 0 && length == window - 1, "len == W - 1");
  NoteEvent(window > 0 && length == window + 1, "len == W + 1");
  NoteEvent(window > 0 && seq_ >= window, "chunk S >= W");
  NoteEvent(!m.strategy->windowed && m.strategy->amortized_growth &&
                cache.capacity() > capacity_before && capacity_before > 0,
            "growth");
  NoteEvent(m.forked && m.branches.size() > 1, "fork then diverge");
  NoteEvent(m.branches[branch_].reused_after_reset, "reset then reuse");
  NoteEvent(!k->is_contiguous(), "strided input");
  NoteEvent(!k_.broadcast_dims.empty(), "stride-0 input");
  NoteEvent(std::count(active_.begin(), active_.end(), false) > 0, "inactive rows");
  NoteEvent(into_kept_view_, "append into the kept view");
}

void AppendTokens::show(std::ostream& os) const {
  const char* names[] = {"Prefill", "Decode", "Grow"};
  os << names[static_cast<int>(kind_)] << "(branch " << branch_ << ", S=" << seq_ << ", "
     << DTypeName(shape_.dtype) << " B=" << shape_.batch << " KH=" << shape_.num_kv_heads
     << " D=" << shape_.head_dim << ", k " << DescribeLayout(k_) << ", v " << DescribeLayout(v_);
  for (const auto& [name, spec] : {std::pair<const char*, const TensorSpec*>{"k", &k_}, {"v", &v_}}) {
    const int64_t special = std::count_if(spec->values.begin(), spec->values.end(),
                                          [](float x) { return !std::isfinite(x); });
    if (special > 0) os << ", " << special << " NaN/inf in " << name;
  }
  if (!active_.empty()) os << ", active [" << absl::StrJoin(active_, ",") << "]";
  if (into_kept_view_) os << ", into the kept view";
  os << ")";
}

// An external engine's strategy may declare that it has no Reset or Fork (CacheStrategy).
ResetBranch::ResetBranch(const Model& m) : branch_(PickBranch(m)) { RC_PRE(m.strategy->resets); }

void ResetBranch::checkPreconditions(const Model& m) const {
  RequireBranch(m, branch_);
  RC_PRE(m.strategy->resets);
}

void ResetBranch::apply(Model& m) const {
  m.branches[branch_].model.Reset();
  m.branches[branch_].was_reset = true;
  m.branches[branch_].may_share_buffers = false;  // Reset drops every buffer
}

void ResetBranch::run(const Model& m0, Sut& sut) const {
  sut.caches[branch_]->Reset();
  RC_ASSERT(sut.caches[branch_]->seq_len() == 0);
  CheckMachine(nextState(m0), sut, branch_);
}

void ResetBranch::show(std::ostream& os) const { os << "Reset(branch " << branch_ << ")"; }

ForkBranch::ForkBranch(const Model& m) : branch_(PickBranch(m)) {
  RC_PRE(m.strategy->forks && m.branches.size() < 3);
}

void ForkBranch::checkPreconditions(const Model& m) const {
  RequireBranch(m, branch_);
  RC_PRE(m.strategy->forks && m.branches.size() < 3);
}

void ForkBranch::apply(Model& m) const {
  m.branches[branch_].may_share_buffers = true;
  m.branches.push_back(m.branches[branch_]);
  m.forked = true;
}

void ForkBranch::run(const Model& m0, Sut& sut) const {
  sut.caches.push_back(sut.caches[branch_]->Fork());
  sut.last_views.push_back(sut.last_views[branch_]);
  sut.kept_views.push_back(sut.kept_views[branch_]);
  // The new branch starts from its parent's counters and is the one the Fork acts on (an
  // engine may copy the buffers at once and count that there); the parent's stay as they were.
  sut.counters_seen.push_back(sut.counters_seen[branch_]);
  CheckMachine(nextState(m0), sut, static_cast<int>(sut.caches.size()) - 1);
}

void ForkBranch::show(std::ostream& os) const {
  os << "Fork(branch " << branch_ << " -> branch " << "new)";
}

}  // namespace kvcheck::properties::cache_machine
