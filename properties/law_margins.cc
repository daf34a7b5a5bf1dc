#include "properties/law_margins.h"

#include "properties/ratio_wire.h"

namespace kvcheck::properties {

std::string EncodeLawMargins(const LawMarginMap& margins) {
  std::string wire;
  for (const auto& [law, ratios] : margins) AppendRatioRecord(wire, law, {}, ratios);
  return wire;
}

std::string EncodeLawMargin(const std::string& law, double margin) {
  LawMarginMap margins;
  margins[law].Add(margin);
  return EncodeLawMargins(margins);
}

void MergeLawMargins(std::string_view wire, LawMarginMap* margins) {
  if (margins == nullptr) return;
  ForEachRatioRecord(wire, [margins](std::string_view law, const RecordCounts&,
                                     const reference::RatioStats& ratios) {
    (*margins)[std::string(law)].Merge(ratios);
  });
}

}  // namespace kvcheck::properties
