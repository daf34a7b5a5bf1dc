// The BadAppend command: appends that must fail with a specific status code and leave the
// cache exactly as it was (K and V, lengths, capacity and counters).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/cache_machine_commands.h"
#include "properties/generators.h"
#include "rapidcheck.h"

namespace kvcheck::properties::cache_machine {
namespace {

enum Kind {
  kWrongDType,       // shape fixed: dtype differs         -> kFailedPrecondition
  kWrongBatch,       // shape fixed: B differs             -> kFailedPrecondition
  kWrongKvHeads,     // shape fixed: KH differs            -> kFailedPrecondition
  kWrongHeadDim,     // shape fixed: D differs             -> kFailedPrecondition
  kZeroSize,         // B, KH or D is 0                    -> kInvalidArgument
  kKvMismatch,       // k and v shapes differ              -> kInvalidArgument
  kWrongRank,        // rank 3                             -> kInvalidArgument
  kOverflowingSeq,   // S past kMaxSequenceLength          -> kOutOfRange
  kActiveFlags,      // inactive rows (or a wrong count)   -> kUnimplemented / kInvalidArgument
  kNumKinds,
};

const char* const kKindNames[] = {"wrong dtype", "wrong B",        "wrong KH",
                                  "wrong D",     "zero-size dim",  "k/v shape mismatch",
                                  "rank 3",      "overflowing S",  "bad active flags"};

// "f32 [2, 1, 1, 4]".
std::string DescribeShape(DType dtype, absl::Span<const int64_t> dims) {
  return absl::StrCat(DTypeName(dtype), " [", absl::StrJoin(dims, ", "), "]");
}
std::string DescribeShape(const Tensor& t) {
  return DescribeShape(t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()));
}

Tensor Zeros(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> t = Tensor::Filled(dtype, shape, 1.0f);
  RC_ASSERT(t.ok());
  return *std::move(t);
}

}  // namespace

BadAppend::BadAppend(const Model& m) : branch_(PickBranch(m)), kind_(*Uniform(0, int{kNumKinds})) {
  const bool fixed = m.branches[branch_].model.shape().has_value();
  RC_PRE(fixed || kind_ > kWrongHeadDim);
  if (kind_ == kZeroSize) zero_dim_ = *Choice(0, 1, 3);
  if (kind_ == kKvMismatch) mismatch_dim_ = *Choice(2, 0, 1, 3, 4);
  if (kind_ == kKvMismatch || kind_ == kWrongRank) v_is_wrong_ = *Uniform(0, 2) == 0;
  if (kind_ == kActiveFlags) flags_ = *Uniform(0, 3);
  into_kept_view_ = *Uniform(0, 2) == 1;  // shrinks to Append
}

void BadAppend::checkPreconditions(const Model& m) const {
  RequireBranch(m, branch_);
  RC_PRE(m.branches[branch_].model.shape().has_value() || kind_ > kWrongHeadDim);
}

void BadAppend::run(const Model& m, Sut& sut) const {
  KvCache& cache = *sut.caches[branch_];
  const reference::CacheModel& branch = m.branches[branch_].model;
  reference::CacheShape shape{1, 2, 3, m.dtype};
  if (branch.shape().has_value()) shape = *branch.shape();
  const int64_t capacity = cache.capacity();
  const CacheCounters counters = cache.counters();
  std::vector<int64_t> dims = {shape.batch, shape.num_kv_heads, 1, shape.head_dim};
  DType dtype = shape.dtype;
  absl::StatusCode expected = absl::StatusCode::kInvalidArgument;
  absl::Status status;
  // Through AppendActive, or AppendActiveInto the kept view, which must come out unchanged.
  auto append = [&](const Tensor& k, const Tensor& v, absl::Span<const bool> active) {
    if (!into_kept_view_) return cache.AppendActive(k, v, active).status();
    CacheView& kept = sut.kept_views[branch_];
    const CacheView before = kept;
    absl::Status result = cache.AppendActiveInto(k, v, active, kept);
    if (!result.ok()) {
      const std::string change = DescribeViewChange(before, kept);
      if (!change.empty()) RC_FAIL(absl::StrCat("a failed AppendInto changed its view: ", change));
    }
    return result;
  };
  switch (kind_) {
    case kWrongDType:
      dtype = m.dtype == DType::kBF16 ? DType::kF16 : DType::kBF16;
      expected = absl::StatusCode::kFailedPrecondition;
      break;
    case kWrongBatch:
      dims[0] += 1;
      expected = absl::StatusCode::kFailedPrecondition;
      break;
    case kWrongKvHeads:
      dims[1] += 1;
      expected = absl::StatusCode::kFailedPrecondition;
      break;
    case kWrongHeadDim:
      dims[3] += 1;
      expected = absl::StatusCode::kFailedPrecondition;
      break;
    case kZeroSize:
      dims[zero_dim_] = 0;
      break;
    default:
      break;
  }
  const Tensor k = Zeros(dtype, dims);
  Tensor sent_k = k, sent_v = k;  // what a shape or dtype mistake appends
  if (kind_ == kKvMismatch || kind_ == kWrongRank) {
    // One of the two right for the cache, the other not: one size or the dtype differs, or
    // it has rank 3.
    std::vector<int64_t> other_dims = dims;
    DType other_dtype = dtype;
    if (kind_ == kWrongRank) {
      other_dims.pop_back();
    } else if (mismatch_dim_ == 4) {
      other_dtype = dtype == DType::kF32 ? DType::kF16 : DType::kF32;
    } else {
      other_dims[mismatch_dim_] += 1;
    }
    const Tensor other = Zeros(other_dtype, other_dims);
    sent_k = v_is_wrong_ ? k : other;
    sent_v = v_is_wrong_ ? other : k;
    status = append(sent_k, sent_v, {});
  } else if (kind_ == kOverflowingSeq) {
    // A zero-stride (broadcast) view: enormous S without the memory.
    const int64_t seq = kMaxSequenceLength - MaxAppended(branch) + 1;
    absl::StatusOr<Layout> layout = Layout::Strided(
        {shape.batch, shape.num_kv_heads, seq, shape.head_dim}, {0, 0, 0, 1}, 0);
    RC_ASSERT(layout.ok());
    absl::StatusOr<Tensor> huge = Tensor::View(k.storage(), *layout);
    RC_ASSERT(huge.ok());
    status = append(*huge, *huge, {});
    expected = absl::StatusCode::kOutOfRange;
  } else if (kind_ == kActiveFlags) {
    // A wrong number of flags (one more, or one fewer but not none: no flags is every row) is
    // invalid everywhere; a false flag needs a per-row strategy.
    absl::InlinedVector<bool, 5> active(shape.batch, true);
    const bool false_flag = !m.strategy->per_row && flags_ == 2;
    if (false_flag) {
      active[0] = false;
      expected = absl::StatusCode::kUnimplemented;
    } else if (flags_ == 1 && shape.batch > 1) {
      active.pop_back();
    } else {
      active.push_back(true);
    }
    status = append(k, k, absl::Span<const bool>(active.data(), active.size()));
  } else {
    status = append(k, k, {});
  }
  if (status.code() != expected) {
    RC_FAIL(absl::StrCat(kKindNames[kind_], ": expected ", absl::StatusCodeToString(expected),
                         ", got ", status.ToString()));
  }
  // An external engine gets the call itself too (KvCache refused it above without asking the
  // engine): it must refuse a shape or dtype the contract forbids, and keep its state.
  const bool engine_checks = kind_ == kWrongDType || kind_ == kWrongBatch ||
                             kind_ == kWrongKvHeads || kind_ == kWrongHeadDim ||
                             (kind_ == kKvMismatch && !into_kept_view_);
  if (engine_checks) {
    const std::optional<absl::Status> answer = cache.AppendUnchecked(sent_k, sent_v);
    if (answer.has_value() && answer->ok()) {
      const std::string fixed =
          branch.shape().has_value()
              ? absl::StrCat("a cache whose first append since the reset was ",
                             DescribeShape(shape.dtype, {shape.batch, shape.num_kv_heads, 1,
                                                         shape.head_dim}))
              : std::string("an empty cache");
      RC_FAIL(absl::StrCat("the engine accepted an append of k ", DescribeShape(sent_k), ", v ",
                           DescribeShape(sent_v), " into ", fixed,
                           ": it must refuse it with an error and keep its state"));
    }
  }
  RC_ASSERT(cache.capacity() == capacity);
  RC_ASSERT(cache.counters().bytes_appended == counters.bytes_appended);
  RC_ASSERT(cache.counters().bytes_allocated == counters.bytes_allocated);
  CheckMachine(m, sut, -1);
  NoteEvent(true, "bad append");
}

void BadAppend::show(std::ostream& os) const {
  os << "BadAppend(branch " << branch_ << ", " << kKindNames[kind_];
  if (kind_ == kZeroSize) os << " in dim " << zero_dim_;
  if (kind_ == kKvMismatch) {
    os << (mismatch_dim_ == 4 ? " in the dtype" : " in dim ");
    if (mismatch_dim_ < 4) os << mismatch_dim_;
  }
  if (kind_ == kKvMismatch || kind_ == kWrongRank) os << (v_is_wrong_ ? ", v wrong" : ", k wrong");
  if (kind_ == kActiveFlags) {
    const char* const kFlags[] = {"one flag more", "one flag fewer", "a false flag"};
    os << ", " << kFlags[flags_] << " (or one more where that cannot be)";
  }
  if (into_kept_view_) os << ", into the kept view";
  os << ")";
}

}  // namespace kvcheck::properties::cache_machine
