#include "properties/dense_model.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include "src/base/check.h"

namespace kvcheck::properties {

int64_t DenseTensor::FlatIndex(const std::vector<int64_t>& index) const {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

DenseTensor Snapshot(const Tensor& tensor) {
  DenseTensor dense;
  dense.shape.assign(tensor.shape().begin(), tensor.shape().end());
  ForEachIndex(dense.shape, [&](const std::vector<int64_t>& index) {
    dense.bits.push_back(tensor.GetBits(index));
  });
  return dense;
}

void showValue(const DenseTensor& t, std::ostream& os) {
  os << "[" << absl::StrJoin(t.shape, ",") << "] bits {";
  for (size_t i = 0; i < t.bits.size() && i < 32; ++i) {
    os << (i > 0 ? " " : "") << absl::StrFormat("%x", t.bits[i]);
  }
  os << (t.bits.size() > 32 ? " ...}" : "}");
}

DenseTensor ModelNarrow(const DenseTensor& t, int dim, int64_t start, int64_t length) {
  DenseTensor out;
  out.shape = t.shape;
  out.shape[dim] = length;
  ForEachIndex(out.shape, [&](std::vector<int64_t> index) {
    index[dim] += start;
    out.bits.push_back(t.bits[t.FlatIndex(index)]);
  });
  return out;
}

DenseTensor ModelTranspose(const DenseTensor& t, int dim0, int dim1) {
  DenseTensor out;
  out.shape = t.shape;
  std::swap(out.shape[dim0], out.shape[dim1]);
  ForEachIndex(out.shape, [&](std::vector<int64_t> index) {
    std::swap(index[dim0], index[dim1]);
    out.bits.push_back(t.bits[t.FlatIndex(index)]);
  });
  return out;
}

DenseTensor ModelPermute(const DenseTensor& t, const std::vector<int>& order) {
  DenseTensor out;
  for (int d : order) out.shape.push_back(t.shape[d]);
  ForEachIndex(out.shape, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> in_t(index.size());
    for (size_t i = 0; i < order.size(); ++i) in_t[order[i]] = index[i];
    out.bits.push_back(t.bits[t.FlatIndex(in_t)]);
  });
  return out;
}

DenseTensor ModelCat(const std::vector<DenseTensor>& parts, int dim) {
  KV_CHECK(!parts.empty());
  DenseTensor out;
  out.shape = parts[0].shape;
  out.shape[dim] = 0;
  for (const DenseTensor& p : parts) out.shape[dim] += p.shape[dim];
  ForEachIndex(out.shape, [&](std::vector<int64_t> index) {
    size_t part = 0;
    while (index[dim] >= parts[part].shape[dim]) index[dim] -= parts[part++].shape[dim];
    out.bits.push_back(parts[part].bits[parts[part].FlatIndex(index)]);
  });
  return out;
}

void ModelSliceSet(DenseTensor& dst, const DenseTensor& src, int dim, int64_t offset) {
  ForEachIndex(src.shape, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> target = index;
    target[dim] += offset;
    dst.bits[dst.FlatIndex(target)] = src.bits[src.FlatIndex(index)];
  });
}

}  // namespace kvcheck::properties
