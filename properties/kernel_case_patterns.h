// File: kernel_case_patterns.h
// The special-value, mask and position patterns of a kernel case (kernel_case.h), drawn as
// plans that do not depend on the case's sizes and applied to them afterwards.
//
// Why plans: RapidCheck shrinks a generated case one draw at a time, in drawing order, and
// never returns to an earlier draw once a later one has shrunk; shrinking a draw also redraws
// everything after it. A pattern drawn from the sizes (a row index below B * H * Sq, a key
// below Skv) would be redrawn whenever a size shrinks, and a pattern whose validity limits a
// size (a query 2^40 past a key needs that key) would hold the size up. A plan holds
// fractions and choices instead: GenKernelCase draws every plan before the sizes, each plan
// shrinks to its simplest form first, and the sizes then shrink under it. Each plan is one
// draw (a nested rc::gen::exec), so its own inner draws never move the case's others.
#ifndef KVCHECK_PROPERTIES_KERNEL_CASE_PATTERNS_H_
#define KVCHECK_PROPERTIES_KERNEL_CASE_PATTERNS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "properties/generators.h"
#include "rapidcheck.h"
#include "reference/attention_problem.h"

namespace kvcheck::properties {

// A fraction in [0, 1) on a 2^20 grid: an index into a range whose size is not known yet.
// Shrinks to 0 (the first index).
using Fraction = int64_t;
inline constexpr Fraction kFractionOne = int64_t{1} << 20;
// The index `f` picks among `n` (0 when n is 0).
inline int64_t Pick(Fraction f, int64_t n) { return n <= 0 ? 0 : f * n / kFractionOne; }

// `count` elements from flat index `at` of q, k or v (row-major (B, H, Sq, D) or (B, KH, Skv,
// D)) set to `value`.
struct ValueFill {
  enum class Tensor { kQ, kK, kV };
  Tensor tensor = Tensor::kQ;
  int64_t at = 0;
  int64_t count = 0;
  float value = 0;
};

// Special values written over the seeded ones, the query rows they aim at (always checked)
// and what they are in words (for the counterexample).
struct ValuePattern {
  std::vector<ValueFill> fills;
  std::vector<int64_t> focus_rows;
  std::vector<std::string> notes;
};

// NaN or infinite values: a few elements, a whole query row, a tile of keys or values, or the
// key or value of one slot that the newest query rows see and the oldest do not.
struct SpecialsPlan {
  struct Element {
    int tensor = 0;      // q, k, v
    Fraction at = 0;
    int value = 0;       // NaN, +inf, -inf
  };
  int pattern = 0;       // 0 elements, 1 a query row, 2 a tile of keys, 3 of values, 4 one slot
  int value = 0;         // NaN, +inf, -inf
  bool huge = false;     // a tile of keys: 3e38 (dot products overflow) instead
  bool keys = false;     // one slot: its key rather than its value
  Fraction row = 0, batch = 0, kv_head = 0, tile = 0, slot = 0;
  std::vector<Element> elements;
};
rc::Gen<SpecialsPlan> GenSpecialsPlan();
ValuePattern ApplySpecialsPlan(const SpecialsPlan& plan, const reference::AttentionProblem& dims);

// An additive mask: random entries (0, -inf, finite biases), leading or trailing keys removed
// (a padded batch row), rows with no key, one tile allowed, +inf or NaN entries, a finite
// "minus infinity" (-1e9, -1e30); and sometimes NaN or infinite K or V at a key it removes.
struct MaskPlan {
  bool per_batch = false, per_head = false;  // mask_batch = B (else 1), mask_heads = H
  int pattern = 0;
  uint64_t noise_seed = 0;
  bool run_at_edge = true;  // leading / trailing run: one of the tile edges, or a fraction
  int run_edge = 0;
  Fraction run = 0;
  bool padding = false;
  Fraction tile = 0;
  float minus_infinity = -1e9f;
  uint64_t row_seed = 0;
  bool removes_nothing = false;
  std::vector<std::pair<Fraction, bool>> infinite_entries;  // (entry, NaN rather than +inf)
  // Values at a removed key: 0 none, 1 a key (K or V rows) every row of one KV head's group
  // removes, 2 one V element at a key one mask row removes.
  int removed_values = 0;
  bool keys = false, huge = false;
  int value = 0;
  Fraction batch = 0, kv_head = 0, key = 0, mask_row = 0, element = 0;
  std::optional<LayoutDraw> layout;  // none: contiguous
};
rc::Gen<MaskPlan> GenMaskPlan();

struct MaskPattern {
  int64_t batch = 0, heads = 0;
  std::vector<float> values;  // (batch, heads, Sq, Skv)
  ValuePattern removed_keys;  // with the mask's own notes
};
MaskPattern ApplyMaskPlan(const MaskPlan& plan, const reference::AttentionProblem& dims);

// Positions: default (queries are the newest keys), a ring cache's slot order (a few tokens
// past the window, or 2^40 more), varlen rows padded with empty slots (-1), explicit
// positions on one side only, or both tables from a per-row offset (0 .. 2^40).
struct PositionsPlan {
  struct Row {
    int length = 0;          // varlen: 0 .. 3 the edges 0, 1, Skv - 1, Skv; 4 a fraction
    Fraction fraction = 0;
    int offset = 0;          // both: 0, 1, 7, 1000, 2^40
    int64_t back = 0;
    bool odd_query = false;  // both: one query is an empty slot or just before the first key
    bool empty_slot = false;
    Fraction query = 0;
  };
  std::string kind = "default";
  int64_t past = 0;          // ring: tokens appended past the window
  bool far = false;          // ring: 2^40 more
  bool ring_window = false;  // ring: the window is the ring's own (W = Skv)
  bool ahead = false;        // q only: queries up to 40 ahead of the newest key
  int64_t shift = 0;         // q only: how far back (or ahead); kv only: keys on (or back)
  std::array<Row, 3> rows;   // per batch row (at most 3)
};
rc::Gen<PositionsPlan> GenPositionsPlan();
// Fills dims.q_positions and dims.kv_positions (left empty for the defaults).
void ApplyPositionsPlan(const PositionsPlan& plan, reference::AttentionProblem& p);

// Writes `pattern`'s fills into p.q, p.k, p.v.
void ApplyValuePattern(const ValuePattern& pattern, reference::AttentionProblem& p);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_KERNEL_CASE_PATTERNS_H_
