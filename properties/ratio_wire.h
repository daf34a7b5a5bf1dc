// File: ratio_wire.h
// Observed/bound ratios as bytes, so that statistics collected inside an isolated check
// (case_isolation.h) reach the parent process: a tagged record per (kernel or family, dtype).
#ifndef KVCHECK_PROPERTIES_RATIO_WIRE_H_
#define KVCHECK_PROPERTIES_RATIO_WIRE_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "reference/attention_comparison.h"

namespace kvcheck::properties {

// Counts that travel with a record (cases, elements outside the bound's regime, ...).
using RecordCounts = std::array<int64_t, 3>;

// Appends one record: the label, its counts, and the ratios.
inline void AppendRatioRecord(std::string& wire, std::string_view label, const RecordCounts& counts,
                              const reference::RatioStats& ratios) {
  const auto put = [&wire](const void* data, size_t size) {
    wire.append(static_cast<const char*>(data), size);
  };
  const uint64_t label_size = label.size();
  const uint64_t ratio_count = static_cast<uint64_t>(ratios.count());
  put(&label_size, sizeof label_size);
  put(label.data(), label.size());
  put(counts.data(), sizeof counts);
  put(&ratio_count, sizeof ratio_count);
  put(ratios.values().data(), ratio_count * sizeof(double));
}

// Calls `record` for every record of `wire` (the output of AppendRatioRecord calls).
inline void ForEachRatioRecord(
    std::string_view wire,
    const std::function<void(std::string_view label, const RecordCounts& counts,
                             const reference::RatioStats& ratios)>& record) {
  size_t at = 0;
  const auto get = [&](void* data, size_t size) {
    if (at + size > wire.size()) return false;
    std::memcpy(data, wire.data() + at, size);
    at += size;
    return true;
  };
  while (at < wire.size()) {
    uint64_t label_size = 0, ratio_count = 0;
    RecordCounts counts{};
    if (!get(&label_size, sizeof label_size) || at + label_size > wire.size()) return;
    const std::string_view label = wire.substr(at, label_size);
    at += label_size;
    if (!get(counts.data(), sizeof counts) || !get(&ratio_count, sizeof ratio_count)) return;
    reference::RatioStats ratios;
    for (uint64_t i = 0; i < ratio_count; ++i) {
      double ratio;
      if (!get(&ratio, sizeof ratio)) return;
      ratios.Add(ratio);
    }
    record(label, counts, ratios);
  }
}

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_RATIO_WIRE_H_
