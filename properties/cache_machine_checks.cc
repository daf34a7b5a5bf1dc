#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/cache_machine.h"
#include "rapidcheck.h"

namespace kvcheck::properties {

std::string DescribeViewMismatch(const CacheView& view, const reference::CacheModel& model,
                                 DType dtype, bool per_row, const std::string& what) {
  if (!model.shape().has_value()) {
    return view.length() == 0 ? "" : absl::StrCat(what, ": empty cache shows ", view.length(),
                                                  " slots");
  }
  const reference::CacheShape& shape = *model.shape();
  const int64_t B = shape.batch, KH = shape.num_kv_heads, D = shape.head_dim;
  int64_t length = 0;
  for (int64_t b = 0; b < B; ++b) length = std::max(length, model.visible_count(b));
  const Dims expected_shape = {B, KH, length, D};
  if (view.k.shape() != expected_shape || view.v.shape() != expected_shape ||
      view.k.dtype() != dtype || view.v.dtype() != dtype) {
    return absl::StrCat(what, ": K is ", DTypeName(view.k.dtype()), " ",
                        DimsToString(view.k.shape()), ", V is ", DTypeName(view.v.dtype()), " ",
                        DimsToString(view.v.shape()), "; expected ", DTypeName(dtype), " ",
                        DimsToString(expected_shape));
  }
  if (!view.positions.empty() && static_cast<int64_t>(view.positions.size()) != B * length) {
    return absl::StrCat(what, ": ", view.positions.size(), " positions for ", B, " x ", length,
                        " slots");
  }
  const std::vector<uint32_t> k_bits = view.k.ToBits();
  const std::vector<uint32_t> v_bits = view.v.ToBits();
  for (int64_t b = 0; b < B; ++b) {
    const absl::Span<const reference::ModelToken> visible = model.VisibleSpan(b);
    const int64_t first = model.appended(b) - static_cast<int64_t>(visible.size());
    std::vector<bool> seen(visible.size(), false);
    for (int64_t j = 0; j < length; ++j) {
      const int64_t position = view.position(b, j);
      if (position == -1 && per_row) continue;
      if (position < first || position >= model.appended(b) || seen[position - first]) {
        return absl::StrCat(what, ": batch row ", b, " slot ", j, " claims position ", position,
                            "; visible positions are [", first, ", ", model.appended(b),
                            ") each once");
      }
      seen[position - first] = true;
      const reference::ModelToken& token = visible[position - first];
      for (int64_t h = 0; h < KH; ++h) {
        for (int64_t d = 0; d < D; ++d) {
          const int64_t at = ((b * KH + h) * length + j) * D + d;
          if (k_bits[at] != token.k[h * D + d] || v_bits[at] != token.v[h * D + d]) {
            // Bits compare exactly (a cache moves values, never rounds them); the values
            // are for the reader.
            const auto value = [dtype](uint32_t bits) {
              float f;
              if (dtype == DType::kF32) {
                std::memcpy(&f, &bits, sizeof f);
              } else {
                f = dtype == DType::kF16 ? F16BitsToF32(static_cast<uint16_t>(bits))
                                         : BF16BitsToF32(static_cast<uint16_t>(bits));
              }
              return f;
            };
            return absl::StrCat(
                what, ": batch row ", b, " head ", h, " position ", position, " (slot ", j,
                ") element ", d, ": engine K/V ", value(k_bits[at]), "/", value(v_bits[at]),
                " (bits ", k_bits[at], "/", v_bits[at], "), reference model ",
                value(token.k[h * D + d]), "/", value(token.v[h * D + d]), " (bits ",
                token.k[h * D + d], "/", token.v[h * D + d], ")");
          }
        }
      }
    }
    if (std::count(seen.begin(), seen.end(), true) != static_cast<int64_t>(visible.size())) {
      return absl::StrCat(what, ": batch row ", b, " shows ",
                          std::count(seen.begin(), seen.end(), true), " of its ",
                          visible.size(), " visible tokens");
    }
  }
  return "";
}

// The capacity() contract (kv_cache.h) and the storage accounting: nothing held before the
// first append or after Reset; the window for window strategies, at least every row's
// length otherwise; at least the visible tokens' bytes held.
void CheckCapacityAndHeldBytes(const CacheMachineModel& model, const KvCache& cache,
                               const reference::CacheModel& branch, int index) {
  // An external engine may not report its storage (CacheStrategy::reports_storage).
  if (!model.strategy->reports_storage) return;
  const int64_t capacity = cache.capacity();
  const int64_t held = cache.counters().bytes_held;
  if (!branch.shape().has_value()) {
    if (capacity != 0 || held != 0) {
      RC_FAIL(absl::StrCat("branch ", index, " holds nothing (constructed or reset) but reports "
                           "capacity ", capacity, " and ", held, " bytes held"));
    }
    return;
  }
  const reference::CacheShape& shape = *branch.shape();
  int64_t shortest = INT64_MAX, visible = 0;
  for (int64_t b = 0; b < shape.batch; ++b) {
    shortest = std::min(shortest, branch.appended(b));
    visible += branch.visible_count(b);
  }
  if (model.strategy->windowed && capacity != model.window()) {
    RC_FAIL(absl::StrCat("branch ", index, " of a window-", model.window(),
                         " strategy reports capacity ", capacity));
  }
  if (!model.strategy->windowed && capacity < shortest) {
    RC_FAIL(absl::StrCat("branch ", index, " reports capacity ", capacity, " below its rows' ",
                         "length ", shortest));
  }
  // K and V of one token of one batch row.
  const int64_t token_bytes = 2 * shape.num_kv_heads * shape.head_dim * DTypeSize(shape.dtype);
  // Every row can hold `capacity` tokens in the buffers it has now: at least that many slots'
  // bytes are held.
  const int64_t slot_bytes = shape.batch * token_bytes;
  if (held < capacity * slot_bytes) {
    RC_FAIL(absl::StrCat("branch ", index, " reports capacity ", capacity, " (", slot_bytes,
                         " bytes a slot) but holds ", held, " bytes"));
  }
  const int64_t visible_bytes = visible * token_bytes;
  if (held < visible_bytes) {
    RC_FAIL(absl::StrCat("branch ", index, " reports ", held, " bytes held for ",
                         visible_bytes, " bytes of visible tokens"));
  }
}

std::string DescribeViewChange(const CacheView& before, const CacheView& after) {
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.storage() == b.storage() && a.dtype() == b.dtype() && a.shape() == b.shape() &&
           a.strides() == b.strides() && a.layout().offset() == b.layout().offset();
  };
  auto describe = [](const Tensor& t) {
    return absl::StrCat(DTypeName(t.dtype()), " ", t.layout().DebugString(), " storage ",
                        absl::Hex(reinterpret_cast<uintptr_t>(t.storage().get())));
  };
  if (!same(before.k, after.k)) {
    return absl::StrCat("k was ", describe(before.k), ", is ", describe(after.k));
  }
  if (!same(before.v, after.v)) {
    return absl::StrCat("v was ", describe(before.v), ", is ", describe(after.v));
  }
  if (before.positions != after.positions) {
    return absl::StrCat("positions were [", absl::StrJoin(before.positions, ","), "], are [",
                        absl::StrJoin(after.positions, ","), "]");
  }
  return "";
}

void CheckCounters(const CacheMachineModel& model, const CacheMachineSut& sut, int index,
                   int acted) {
  if (!model.strategy->reports_storage) return;
  const std::string broken =
      DescribeCounterLawBreak(sut.counters_seen[index], ObserveCounters(*sut.caches[index]),
                              {.acted = index == acted,
                               .amortized_growth = model.strategy->amortized_growth,
                               .may_share_buffers = model.branches[index].may_share_buffers});
  if (!broken.empty()) {
    RC_FAIL(absl::StrCat("branch ", index, " counters: ", broken,
                         acted >= 0 && acted != index
                             ? absl::StrCat(" (the command acted on branch ", acted, ")")
                             : ""));
  }
}

void CheckMachine(const CacheMachineModel& model, CacheMachineSut& sut, int acted) {
  RC_ASSERT(sut.caches.size() == model.branches.size());
  for (size_t i = 0; i < model.branches.size(); ++i) {
    const KvCache& cache = *sut.caches[i];
    const reference::CacheModel& branch = model.branches[i].model;
    const absl::StatusOr<CacheView> view = cache.View();
    if (!view.ok()) RC_FAIL(absl::StrCat("branch ", i, " View failed: ", view.status().ToString()));
    const std::string mismatch = DescribeViewMismatch(*view, branch, model.dtype,
                                                      model.strategy->per_row,
                                                      absl::StrCat("branch ", i));
    if (!mismatch.empty()) RC_FAIL(mismatch);
    const int64_t rows = branch.shape().has_value() ? branch.shape()->batch : 1;
    for (int64_t b = 0; b < rows; ++b) {
      RC_ASSERT(cache.row_seq_len(b) == branch.appended(b));
    }
    CheckCapacityAndHeldBytes(model, cache, branch, static_cast<int>(i));
    if (cache.counters().bytes_appended != model.branches[i].bytes_appended) {
      RC_FAIL(absl::StrCat("branch ", i, " counts ", cache.counters().bytes_appended,
                           " bytes appended; its appends gave it ", model.branches[i].bytes_appended,
                           " (K and V of the active rows, since it was made)"));
    }
    // Clone law (and view stability): saved views keep their bits.
    const std::optional<SavedView>& saved = sut.last_views[i];
    const bool own_slots_reused = model.strategy->windowed && static_cast<int>(i) == acted;
    if (saved.has_value() && !own_slots_reused) {
      if (saved->view.k.ToBits() != saved->k_bits || saved->view.v.ToBits() != saved->v_bits) {
        RC_FAIL(absl::StrCat("a view branch ", i, " returned earlier changed after a command on "
                             "branch ", acted));
      }
    }
    // Growth law.
    if (model.strategy->amortized_growth) {
      const CacheCounters& c = cache.counters();
      if (c.bytes_growth_copied > 3 * c.bytes_appended) {
        RC_FAIL(absl::StrCat("growth law: branch ", i, " copied ", c.bytes_growth_copied,
                             " bytes growing for ", c.bytes_appended, " bytes appended"));
      }
    }
    CheckCounters(model, sut, static_cast<int>(i), acted);
  }
  for (size_t i = 0; i < sut.caches.size(); ++i) {
    sut.counters_seen[i] = ObserveCounters(*sut.caches[i]);
  }
}

}  // namespace kvcheck::properties
