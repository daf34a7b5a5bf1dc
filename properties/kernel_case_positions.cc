// The positions plan of a kernel case (kernel_case_patterns.h): drawn apart from the sizes,
// applied to them.
#include "properties/kernel_case.h"
#include "properties/kernel_case_patterns.h"

namespace kvcheck::properties {

rc::Gen<PositionsPlan> GenPositionsPlan() {
  return rc::gen::exec([] {
    PositionsPlan plan;
    const bool explicit_positions = Sometimes(50);
    const std::string kind = *Choice<std::string>("ring", "varlen", "q only", "kv only", "both");
    if (explicit_positions) plan.kind = kind;
    plan.past = *Uniform<int64_t>(0, 50);
    plan.far = Sometimes(20);
    plan.ring_window = Sometimes(50);
    plan.ahead = Sometimes(25);
    plan.shift = *Uniform<int64_t>(0, 4);
    for (PositionsPlan::Row& row : plan.rows) {
      row.length = *Uniform(0, 5);
      row.fraction = *Uniform<Fraction>(0, kFractionOne);
      row.offset = *Uniform(0, 5);
      row.back = *Uniform<int64_t>(0, 4);
      row.odd_query = Sometimes(30);
      row.empty_slot = Sometimes(50);
      row.query = *Uniform<Fraction>(0, kFractionOne);
    }
    return plan;
  });
}

void ApplyPositionsPlan(const PositionsPlan& plan, reference::AttentionProblem& p) {
  p.q_positions.clear();
  p.kv_positions.clear();
  if (plan.kind == "ring" && p.kv_len > 0) {
    // Tokens appended so far: a few past the window, or 2^40 more.
    SetRingPositions(p, p.kv_len + plan.past + (plan.far ? int64_t{1} << 40 : 0));
  } else if (plan.kind == "varlen") {
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < p.batch; ++b) {
      const PositionsPlan::Row& row = plan.rows[b % plan.rows.size()];
      const int64_t edges[] = {0, 1, p.kv_len - 1, p.kv_len};
      lengths.push_back(row.length < 4 ? std::clamp<int64_t>(edges[row.length], 0, p.kv_len)
                                       : Pick(row.fraction, p.kv_len + 1));
    }
    SetVarlenPositions(p, lengths);
  } else if (plan.kind == "q only") {
    // A few back, or up to 40 ahead of the newest key (a query that sees every key).
    const int64_t back = plan.ahead ? -(1 + plan.past % 40) : plan.shift;
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t i = 0; i < p.q_len; ++i) p.q_positions.push_back(p.kv_len - p.q_len + i - back);
    }
  } else if (plan.kind == "kv only") {
    // Keys a few positions on, or back: then the first keys sit at negative positions, empty
    // slots, though numbered consecutively with the rest.
    const int64_t on = plan.ahead ? -plan.shift : plan.shift;
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t j = 0; j < p.kv_len; ++j) p.kv_positions.push_back(j + on);
    }
  } else if (plan.kind == "both") {
    // Both tables, as a chunked prefill at an offset passes them: each batch row's keys from
    // its own offset, its queries the newest of them, a few back; sometimes a query is an
    // empty slot (-1), or sits just before the row's first key. 2^40: positions no float
    // holds exactly, whose differences every rule must take in int64 before any conversion.
    constexpr int64_t kOffsets[] = {0, 1, 7, 1000, int64_t{1} << 40};
    for (int64_t b = 0; b < p.batch; ++b) {
      const PositionsPlan::Row& row = plan.rows[b % plan.rows.size()];
      const int64_t offset = kOffsets[row.offset];
      for (int64_t j = 0; j < p.kv_len; ++j) p.kv_positions.push_back(offset + j);
      for (int64_t i = 0; i < p.q_len; ++i) {
        p.q_positions.push_back(offset + p.kv_len - p.q_len + i - row.back);
      }
      if (row.odd_query) {
        p.q_positions[b * p.q_len + Pick(row.query, p.q_len)] = row.empty_slot ? -1 : offset - 1;
      }
    }
  }
}

}  // namespace kvcheck::properties
