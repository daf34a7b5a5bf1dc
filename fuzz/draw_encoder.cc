#include "fuzz/draw_encoder.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"

namespace kvcheck::fuzz {

int64_t DrawEncoder::Int(std::string_view what, int64_t min, int64_t max) {
  int64_t value = min;
  if (auto planned = plan_.find(what); planned != plan_.end()) {
    size_t& used = used_[planned->first];
    if (used < planned->second.size()) {
      value = planned->second[used++];
      if (value < min || value > max) {
        errors_.push_back(absl::StrCat(std::string(what), " = ", value, " is outside its draw [", min, ", ",
                                       max, "]"));
        value = std::clamp(value, min, max);
      }
    }
  }
  // ConsumeIntegralInRange reads one byte per 8 bits of the range (max - min as uint64), the
  // most significant first, and returns min + (the bytes' value modulo range + 1): the offset
  // from min written in that many bytes decodes to itself.
  const uint64_t range = static_cast<uint64_t>(max) - static_cast<uint64_t>(min);
  const uint64_t offset = static_cast<uint64_t>(value) - static_cast<uint64_t>(min);
  int bytes = 0;
  while (bytes * CHAR_BIT < 64 && (range >> (bytes * CHAR_BIT)) > 0) ++bytes;
  std::vector<uint8_t>& out = draws_.emplace_back();
  for (int b = bytes - 1; b >= 0; --b) out.push_back(static_cast<uint8_t>(offset >> (8 * b)));
  return value;
}

bool DrawEncoder::More(std::string_view what) {
  const auto planned = plan_.find(what);
  if (planned == plan_.end()) return false;
  const auto used = used_.find(what);
  if (used != used_.end() && used->second >= planned->second.size()) return false;
  more_ = true;
  more_at_ = draws_.size();
  return true;
}

std::vector<uint8_t> DrawEncoder::Bytes() const {
  const auto zeros = [](const std::vector<uint8_t>& draw) {
    return std::all_of(draw.begin(), draw.end(), [](uint8_t b) { return b == 0; });
  };
  size_t kept = draws_.size();
  while (kept > 0 && zeros(draws_[kept - 1])) --kept;
  // After the last More() that went on, a byte must remain: keep the draws of zeros up to
  // the first one that has a byte.
  if (more_) {
    const auto bytes_after = [&](size_t end) {
      size_t n = 0;
      for (size_t d = more_at_; d < end; ++d) n += draws_[d].size();
      return n;
    };
    while (kept < draws_.size() && bytes_after(kept) == 0) ++kept;
  }
  std::vector<uint8_t> read_order;
  for (size_t d = 0; d < kept; ++d) {
    read_order.insert(read_order.end(), draws_[d].begin(), draws_[d].end());
  }
  return std::vector<uint8_t>(read_order.rbegin(), read_order.rend());
}

std::vector<std::string> DrawEncoder::Errors() const {
  std::vector<std::string> errors = errors_;
  for (const auto& [what, values] : plan_) {
    const auto used = used_.find(what);
    const size_t taken = used == used_.end() ? 0 : used->second;
    if (taken < values.size()) {
      errors.push_back(absl::StrCat(what, ": ", values.size() - taken, " of ", values.size(),
                                    " planned values never drawn"));
    }
  }
  return errors;
}

}  // namespace kvcheck::fuzz
