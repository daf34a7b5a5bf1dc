#include "src/tensor/layout.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/check.h"
#include "src/base/checked_math.h"

namespace kvcheck {

std::string DimsToString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

namespace {

// Row-major strides as candle computes them: the product of all inner sizes, zeros included
// (so a freshly made empty tensor is contiguous under the rule in layout.h), or nullopt when
// a product overflows int64_t.
std::optional<Dims> TryContiguousStrides(absl::Span<const int64_t> shape) {
  Dims strides(shape.size());
  int64_t acc = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = acc;
    std::optional<int64_t> next = CheckedMul(acc, shape[d]);
    if (!next) return std::nullopt;
    acc = *next;
  }
  return strides;
}

}  // namespace

Dims ContiguousStrides(absl::Span<const int64_t> shape) {
  std::optional<Dims> strides = TryContiguousStrides(shape);
  KV_CHECK_MSG(strides.has_value(), "contiguous strides overflow int64");
  return *std::move(strides);
}

absl::StatusOr<Layout> Layout::Contiguous(absl::Span<const int64_t> shape) {
  if (shape.size() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("layout: rank ", shape.size(), " of shape ",
                                                   DimsToString(shape), " exceeds ", kMaxRank));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("layout: dimension ", d, " of shape ",
                                                     DimsToString(shape), " is negative"));
    }
  }
  std::optional<Dims> strides = TryContiguousStrides(shape);
  if (!strides) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout: contiguous strides of shape ", DimsToString(shape), " overflow int64"));
  }
  return Strided(shape, *strides, 0);
}

absl::StatusOr<Layout> Layout::Strided(absl::Span<const int64_t> shape,
                                       absl::Span<const int64_t> strides, int64_t offset) {
  if (shape.size() != strides.size()) {
    return absl::InvalidArgumentError(absl::StrCat("layout: shape ", DimsToString(shape),
                                                   " has rank ", shape.size(), " but strides ",
                                                   DimsToString(strides), " have rank ",
                                                   strides.size()));
  }
  if (shape.size() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("layout: rank ", shape.size(), " of shape ",
                                                   DimsToString(shape), " exceeds ", kMaxRank));
  }
  if (offset < 0) {
    return absl::InvalidArgumentError(absl::StrCat("layout: offset ", offset, " is negative"));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || strides[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layout: dimension ", d, " has ", shape[d] < 0 ? "negative size " : "negative stride ",
          shape[d] < 0 ? shape[d] : strides[d], " (shape ", DimsToString(shape), ", strides ",
          DimsToString(strides), ")"));
    }
  }
  std::optional<int64_t> count = CheckedProduct(shape);
  if (!count) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout: element count of shape ", DimsToString(shape), " overflows int64"));
  }
  int64_t required = 0;
  if (*count > 0) {
    std::optional<int64_t> last = offset;
    for (size_t d = 0; d < shape.size() && last; ++d) {
      std::optional<int64_t> span = CheckedMul(shape[d] - 1, strides[d]);
      last = span ? CheckedAdd(*last, *span) : std::nullopt;
    }
    std::optional<int64_t> end = last ? CheckedAdd(*last, 1) : std::nullopt;
    if (!end) {
      return absl::InvalidArgumentError(absl::StrCat("layout: largest offset of shape ",
                                                     DimsToString(shape), " strides ",
                                                     DimsToString(strides), " offset ", offset,
                                                     " overflows int64"));
    }
    required = *end;
  }
  return Layout(Dims(shape.begin(), shape.end()), Dims(strides.begin(), strides.end()), offset,
                *count, required);
}

bool Layout::is_contiguous() const {
  // acc is the product of the sizes inside d, in exact arithmetic. It can pass int64_t only in
  // an empty view (a zero size further out keeps the element count small, e.g. [0, 2, 2^32,
  // 2^32]); past that point no stride can equal it, so a size > 1 is not contiguous, until a
  // zero size brings the product back to 0.
  int64_t acc = 1;
  bool past_int64 = false;
  for (int d = rank() - 1; d >= 0; --d) {
    if (shape_[d] > 1 && (past_int64 || strides_[d] != acc)) return false;
    if (shape_[d] == 0) {
      acc = 0;
      past_int64 = false;
    } else if (!past_int64 && __builtin_mul_overflow(acc, shape_[d], &acc)) {
      past_int64 = true;
    }
  }
  return true;
}

int64_t Layout::OffsetOf(absl::Span<const int64_t> index) const {
  KV_CHECK(static_cast<int>(index.size()) == rank());
  int64_t offset = offset_;
  for (int d = 0; d < rank(); ++d) {
    KV_CHECK(index[d] >= 0 && index[d] < shape_[d]);
    offset += index[d] * strides_[d];
  }
  return offset;
}

std::string Layout::DebugString() const {
  return absl::StrCat("shape ", DimsToString(shape_), " strides ", DimsToString(strides_),
                      " offset ", offset_);
}

}  // namespace kvcheck
