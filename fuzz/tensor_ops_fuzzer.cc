// tensor_ops: bytes -> a sequence of tensor operations with hostile arguments (sizes, strides,
// offsets and dimension indices near 0, -1, the dimension size, 2^31, 2^32, 2^62, INT64_MIN /
// MAX, and negative values that a size_t would wrap to), on a pool of up to four tensors that
// share storage through views. Each operation's outcome is predicted independently:
//   - arguments the contract accepts must succeed and give the row-major model's result
//     (properties/dense_model.h), bit for bit;
//   - arguments it rejects must fail with the documented code, and change nothing;
//   - after every operation, every tensor in the pool still shows its model's elements
//     (nothing wrote where it should not, no result aliases what it should not).
// Layouts and storage are probed with hostile shapes too, without allocating past 512
// elements (a huge valid size must be refused by the storage limit, not allocated).
#include <algorithm>
#include <bit>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/fuzz_support.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "properties/cache_machine_commands.h"
#include "properties/dense_model.h"
#include "properties/kernel_case.h"
#include "properties/size_oracle.h"
#include "src/tensor/copy_ops.h"
#include "src/tensor/storage.h"
#include "src/tensor/tensor.h"
#include "src/tensor/view_ops.h"

namespace kvcheck::fuzz {
namespace {

constexpr char kTarget[] = "tensor_ops";
constexpr int kMaxOperations = 32;
constexpr size_t kMaxPool = 4;
constexpr int64_t kMaxElements = 512;  // never allocate more than this per tensor

// The contract's expected outcome of every call comes from properties/size_oracle.h (exact
// 128-bit size arithmetic, shared with the hostile-size tensor properties).
using properties::ContiguousLayoutValid;
using properties::ContiguousResultExpect;
using properties::DenseTensor;
using properties::ExactCount;
using properties::Expect;
using properties::cache_machine::BitsOf;
using properties::cache_machine::FloatOf;

struct Entry {
  Tensor tensor;
  DenseTensor model;
};

struct Run {
  std::vector<Entry> pool;
  Trace trace;
  [[noreturn]] void Fail(const std::string& what) const { fuzz::Fail(kTarget, trace, what); }
};

int64_t HostileInt(FuzzedDataProvider& in, int64_t typical_max) {
  switch (in.ConsumeIntegralInRange(0, 9)) {
    case 0:
      return -in.ConsumeIntegralInRange<int64_t>(1, 4);  // a size_t that wrapped
    case 1: {
      const auto& edges = properties::kHostileEdges;
      return edges[in.ConsumeIntegralInRange<size_t>(0, std::size(edges) - 1)];
    }
    case 2:
      return in.ConsumeIntegral<int64_t>();
    default:
      return in.ConsumeIntegralInRange<int64_t>(0, typical_max);
  }
}

// A dimension index: usually valid, sometimes just outside, sometimes far outside.
int HostileDim(FuzzedDataProvider& in, int rank) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0:
      return -1;
    case 1:
      return rank;
    case 2:
      return in.ConsumeBool() ? INT_MAX : INT_MIN;
    default:
      return rank == 0 ? 0 : in.ConsumeIntegralInRange(0, rank - 1);
  }
}

std::vector<int64_t> ShapeOf(const Tensor& t) {
  return std::vector<int64_t>(t.shape().begin(), t.shape().end());
}

void CheckStatus(const Run& run, const absl::Status& status, Expect expect, const char* op) {
  if (std::optional<std::string> mismatch = properties::StatusMismatch(status, expect, op)) {
    run.Fail(*mismatch);
  }
}

// Every tensor of the pool still shows its model.
void CheckPool(const Run& run) {
  for (size_t i = 0; i < run.pool.size(); ++i) {
    const DenseTensor now = properties::Snapshot(run.pool[i].tensor);
    if (!(now == run.pool[i].model)) {
      run.Fail(absl::StrCat("tensor ", i, " (", run.pool[i].tensor.DebugString(),
                            ") no longer shows its model's elements"));
    }
  }
}

void AddToPool(Run& run, Tensor tensor, DenseTensor model) {
  if (run.pool.size() >= kMaxPool) run.pool.erase(run.pool.begin());
  run.pool.push_back(Entry{std::move(tensor), std::move(model)});
}

void ExpectModel(const Run& run, const Tensor& result, const DenseTensor& model, const char* op) {
  const DenseTensor got = properties::Snapshot(result);
  if (!(got == model)) {
    std::ostringstream shown;
    properties::showValue(model, shown);
    run.Fail(absl::StrCat(op, " result ", result.DebugString(), " differs from the model ",
                          shown.str()));
  }
}

// A new tensor: hostile shape. Layout::Contiguous is probed for any shape; storage is
// allocated only for at most kMaxElements elements, or when the size must be refused.
void Create(Run& run, FuzzedDataProvider& in) {
  const DType dtype = kAllDTypes[in.ConsumeIntegralInRange(0, 2)];
  const int rank = in.ConsumeIntegralInRange(0, 9);
  std::vector<int64_t> shape;
  for (int d = 0; d < rank; ++d) shape.push_back(HostileInt(in, 5));
  run.trace.Add("Create(", DTypeName(dtype), " [", absl::StrJoin(shape, ","), "])");
  const bool valid = ContiguousLayoutValid(shape);
  const absl::StatusOr<Layout> layout = Layout::Contiguous(shape);
  CheckStatus(run, layout.status(), valid ? Expect::kOk : Expect::kInvalidArgument,
              "Layout::Contiguous");
  if (!valid) {
    const absl::StatusOr<Tensor> zeros = Tensor::Zeros(dtype, shape);
    CheckStatus(run, zeros.status(), Expect::kInvalidArgument, "Tensor::Zeros");
    return;
  }
  const int64_t count = *ExactCount(shape);
  if (layout->num_elements() != count) {
    run.Fail(absl::StrCat("Layout::Contiguous counts ", layout->num_elements(), " elements, not ",
                          count));
  }
  if (count > kMaxElements) {
    // Past the storage limit the allocation must be refused, not attempted.
    if (properties::AllocationExpect(count, dtype, MaxStorageBytes()) != Expect::kOk) {
      const absl::StatusOr<Tensor> zeros = Tensor::Zeros(dtype, shape);
      if (zeros.ok() || (zeros.status().code() != absl::StatusCode::kResourceExhausted &&
                         zeros.status().code() != absl::StatusCode::kInvalidArgument)) {
        run.Fail(absl::StrCat("Tensor::Zeros of ", count, " elements returned ",
                              zeros.status().ToString()));
      }
    }
    return;
  }
  const std::vector<float> values =
      properties::SeededValues(in.ConsumeIntegral<uint32_t>(), count, 1.0f, dtype);
  absl::StatusOr<Tensor> tensor = Tensor::FromFloats(dtype, shape, values);
  if (!tensor.ok()) run.Fail(absl::StrCat("FromFloats failed: ", tensor.status().ToString()));
  DenseTensor model{shape, {}};
  for (float x : values) model.bits.push_back(BitsOf(x, dtype));
  ExpectModel(run, *tensor, model, "FromFloats");
  AddToPool(run, *std::move(tensor), std::move(model));
}

// A strided view of a small storage with hostile shape, strides and offset: must be refused
// unless every element lies inside the storage.
void HostileView(Run& run, FuzzedDataProvider& in) {
  const DType dtype = kAllDTypes[in.ConsumeIntegralInRange(0, 2)];
  const int64_t size = in.ConsumeIntegralInRange<int64_t>(0, 64);
  const int rank = in.ConsumeIntegralInRange(0, 4);
  std::vector<int64_t> shape, strides;
  for (int d = 0; d < rank; ++d) shape.push_back(HostileInt(in, 6));
  for (int d = 0; d < rank; ++d) strides.push_back(HostileInt(in, 12));
  const int64_t offset = HostileInt(in, 8);
  run.trace.Add("View(storage of ", size, " ", DTypeName(dtype), ", shape [",
                absl::StrJoin(shape, ","), "] strides [", absl::StrJoin(strides, ","), "] offset ",
                offset, ")");
  absl::StatusOr<std::shared_ptr<Storage>> storage = Storage::Allocate(dtype, size);
  if (!storage.ok()) run.Fail("Storage::Allocate of a small buffer failed");
  const absl::StatusOr<Layout> layout = Layout::Strided(shape, strides, offset);
  CheckStatus(run, layout.status(), properties::StridedLayoutExpect(shape, strides, offset),
              "Layout::Strided");
  if (!layout.ok()) return;
  const absl::StatusOr<Tensor> view = Tensor::View(*storage, *layout);
  CheckStatus(run, view.status(), properties::TensorViewExpect(shape, strides, offset, size),
              "Tensor::View");
  const int64_t count = ExactCount(shape).value_or(0);
  if (view.ok() && count <= kMaxElements) {
    for (uint32_t bits : view->ToBits()) {
      if (bits != 0) run.Fail("a view of a zeroed storage shows a non-zero element");
    }
  }
}

void NarrowOp(Run& run, FuzzedDataProvider& in, size_t i) {
  const Entry& e = run.pool[i];
  const int rank = e.tensor.rank();
  const int dim = HostileDim(in, rank);
  const int64_t size = dim >= 0 && dim < rank ? e.tensor.dim(dim) : 0;
  const int64_t start = HostileInt(in, size);
  const int64_t length = HostileInt(in, size);
  run.trace.Add("Narrow(tensor ", i, " ", DimsToString(e.tensor.shape()), ", dim ", dim, ", start ",
                start, ", length ", length, ")");
  const absl::StatusOr<Tensor> result = Narrow(e.tensor, dim, start, length);
  CheckStatus(run, result.status(), properties::NarrowExpect(e.tensor.shape(), dim, start, length),
              "Narrow");
  if (!result.ok()) return;
  DenseTensor model = properties::ModelNarrow(e.model, dim, start, length);
  ExpectModel(run, *result, model, "Narrow");
  AddToPool(run, *result, std::move(model));
}

void TransposeOp(Run& run, FuzzedDataProvider& in, size_t i) {
  const Entry& e = run.pool[i];
  const int rank = e.tensor.rank();
  const int d0 = HostileDim(in, rank), d1 = HostileDim(in, rank);
  run.trace.Add("Transpose(tensor ", i, " ", DimsToString(e.tensor.shape()), ", ", d0, ", ", d1,
                ")");
  const absl::StatusOr<Tensor> result = Transpose(e.tensor, d0, d1);
  CheckStatus(run, result.status(), properties::TransposeExpect(rank, d0, d1), "Transpose");
  if (!result.ok()) return;
  DenseTensor model = properties::ModelTranspose(e.model, d0, d1);
  ExpectModel(run, *result, model, "Transpose");
  AddToPool(run, *result, std::move(model));
}

void PermuteOp(Run& run, FuzzedDataProvider& in, size_t i) {
  const Entry& e = run.pool[i];
  const int rank = e.tensor.rank();
  std::vector<int> order(rank);
  std::iota(order.begin(), order.end(), 0);
  for (int n = in.ConsumeIntegralInRange(0, 23); n > 0; --n) {
    std::next_permutation(order.begin(), order.end());
  }
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0:
      order.push_back(rank);  // one too many
      break;
    case 1:
      if (!order.empty()) order.back() = order.front();  // a repeat (valid for rank 1)
      break;
    case 2:
      if (!order.empty()) order[0] = HostileDim(in, rank);
      break;
    default:
      break;
  }
  run.trace.Add("Permute(tensor ", i, " ", DimsToString(e.tensor.shape()), ", [",
                absl::StrJoin(order, ","), "])");
  const absl::StatusOr<Tensor> result = Permute(e.tensor, order);
  CheckStatus(run, result.status(), properties::PermuteExpect(rank, order), "Permute");
  if (!result.ok()) return;
  // A permutation is a product of transpositions: model it with ModelTranspose.
  DenseTensor model = e.model;
  std::vector<int> current(rank);  // current[k]: input dim now at position k
  std::iota(current.begin(), current.end(), 0);
  for (int k = 0; k < rank; ++k) {
    const int at =
        static_cast<int>(std::find(current.begin(), current.end(), order[k]) - current.begin());
    if (at != k) {
      model = properties::ModelTranspose(model, k, at);
      std::swap(current[k], current[at]);
    }
  }
  ExpectModel(run, *result, model, "Permute");
  AddToPool(run, *result, std::move(model));
}

void ReshapeOp(Run& run, FuzzedDataProvider& in, size_t i) {
  const Entry& e = run.pool[i];
  std::vector<int64_t> shape;
  if (in.ConsumeBool()) {
    // A factorisation of the element count (usually valid), maybe with a 1 or 0 inserted.
    int64_t rest = e.tensor.num_elements();
    while (rest > 1 && shape.size() < 4) {
      int64_t f = 2;
      while (rest % f != 0) ++f;
      const int64_t take = in.ConsumeBool() ? f : rest;
      shape.push_back(take);
      rest /= take;
    }
    if (rest != 1 || shape.empty()) shape.push_back(rest);
    if (in.ConsumeBool()) shape.insert(shape.begin(), in.ConsumeIntegralInRange<int64_t>(0, 1));
  } else {
    const int rank = in.ConsumeIntegralInRange(0, 9);
    for (int d = 0; d < rank; ++d) shape.push_back(HostileInt(in, 6));
  }
  run.trace.Add("Reshape(tensor ", i, " ", DimsToString(e.tensor.shape()), " -> [",
                absl::StrJoin(shape, ","), "])");
  const absl::StatusOr<Tensor> result = Reshape(e.tensor, shape);
  CheckStatus(run, result.status(), properties::ReshapeExpect(e.tensor.num_elements(), shape),
              "Reshape");
  if (!result.ok()) return;
  DenseTensor model{shape, e.model.bits};
  ExpectModel(run, *result, model, "Reshape");
  AddToPool(run, *result, std::move(model));
}

void ContiguousOp(Run& run, size_t i) {
  const Entry& e = run.pool[i];
  run.trace.Add("Contiguous(tensor ", i, " ", e.tensor.DebugString(), ")");
  const absl::StatusOr<Tensor> result = Contiguous(e.tensor);
  CheckStatus(run, result.status(), ContiguousResultExpect(e.model.shape), "Contiguous");
  if (!result.ok()) return;
  if (!result->is_contiguous()) run.Fail("Contiguous returned a non-contiguous tensor");
  ExpectModel(run, *result, e.model, "Contiguous");
  AddToPool(run, *result, e.model);
}

void CastOp(Run& run, FuzzedDataProvider& in, size_t i) {
  const Entry& e = run.pool[i];
  const DType dtype = kAllDTypes[in.ConsumeIntegralInRange(0, 2)];
  run.trace.Add("Cast(tensor ", i, " ", e.tensor.DebugString(), ", ", DTypeName(dtype), ")");
  const absl::StatusOr<Tensor> result = Cast(e.tensor, dtype);
  CheckStatus(run, result.status(), ContiguousResultExpect(e.model.shape), "Cast");
  if (!result.ok()) return;
  DenseTensor model{e.model.shape, {}};
  for (uint32_t bits : e.model.bits) {
    model.bits.push_back(BitsOf(FloatOf(bits, e.tensor.dtype()), dtype));
  }
  if (result->dtype() != dtype) run.Fail("Cast returned the wrong dtype");
  if (result->SharesStorageWith(e.tensor)) run.Fail("Cast returned a view of its input");
  ExpectModel(run, *result, model, "Cast");
  AddToPool(run, *result, std::move(model));
}

void CatOp(Run& run, FuzzedDataProvider& in) {
  const int parts = in.ConsumeIntegralInRange(0, 3);
  std::vector<size_t> which;
  for (int n = 0; n < parts; ++n) {
    which.push_back(in.ConsumeIntegralInRange<size_t>(0, run.pool.size() - 1));
  }
  const int rank = which.empty() ? 0 : run.pool[which[0]].tensor.rank();
  const int dim = HostileDim(in, rank);
  run.trace.Add("Cat(tensors [", absl::StrJoin(which, ","), "], dim ", dim, ")");
  std::vector<Tensor> tensors;
  std::vector<DenseTensor> models;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DType> dtypes;
  for (size_t i : which) {
    const Entry& e = run.pool[i];
    tensors.push_back(e.tensor);
    models.push_back(e.model);
    shapes.push_back(ShapeOf(e.tensor));
    dtypes.push_back(e.tensor.dtype());
  }
  const std::optional<std::vector<int64_t>> shape = properties::CatShape(shapes, dtypes, dim);
  Expect expect = Expect::kInvalidArgument;
  if (shape) {
    // Sizes stay small, but a joined tensor above the allocation cap of this target is skipped.
    if (ExactCount(*shape).value_or(kMaxElements + 1) > 4 * kMaxElements) return;
    expect = ContiguousResultExpect(*shape);
  }
  const absl::StatusOr<Tensor> result = Cat(tensors, dim);
  CheckStatus(run, result.status(), expect, "Cat");
  if (!result.ok()) return;
  for (const Tensor& t : tensors) {
    if (result->SharesStorageWith(t)) run.Fail("Cat returned storage shared with an input");
  }
  DenseTensor model = properties::ModelCat(models, dim);
  ExpectModel(run, *result, model, "Cat");
  if (result->num_elements() <= kMaxElements) AddToPool(run, *result, std::move(model));
}

// SliceSet / CopyInto write through shared storage: afterwards the destination's model is
// updated and every other pool tensor that shares its storage leaves the pool (their exact
// overlap is what tensor/views_see_writes_through_shared_storage checks).
void DropOthersSharing(Run& run, size_t dst) {
  const Tensor kept = run.pool[dst].tensor;
  std::vector<Entry> remaining;
  for (size_t i = 0; i < run.pool.size(); ++i) {
    if (i == dst || !run.pool[i].tensor.SharesStorageWith(kept)) {
      remaining.push_back(run.pool[i]);
    }
  }
  run.pool = std::move(remaining);
}

void SliceSetOp(Run& run, FuzzedDataProvider& in, size_t dst, size_t src) {
  const Tensor d = run.pool[dst].tensor, s = run.pool[src].tensor;
  const int dim = HostileDim(in, d.rank());
  const int64_t size = dim >= 0 && dim < d.rank() ? d.dim(dim) : 0;
  const int64_t offset = HostileInt(in, size);
  run.trace.Add("SliceSet(dst tensor ", dst, " ", d.DebugString(), ", src tensor ", src, " ",
                s.DebugString(), ", dim ", dim, ", offset ", offset, ")");
  const Expect expect =
      properties::SliceSetExpect(d.shape(), s.shape(), d.dtype() == s.dtype(), dim, offset);
  const DenseTensor src_model = run.pool[src].model;
  const absl::Status status = SliceSet(d, s, dim, offset);
  CheckStatus(run, status, expect, "SliceSet");
  if (!status.ok()) {
    CheckPool(run);  // a failed write changes nothing
    return;
  }
  properties::ModelSliceSet(run.pool[dst].model, src_model, dim, offset);
  ExpectModel(run, d, run.pool[dst].model, "SliceSet");
  DropOthersSharing(run, dst);
}

void CopyIntoOp(Run& run, size_t dst, size_t src) {
  const Tensor d = run.pool[dst].tensor, s = run.pool[src].tensor;
  run.trace.Add("CopyInto(dst tensor ", dst, " ", d.DebugString(), ", src tensor ", src, " ",
                s.DebugString(), ")");
  const bool valid = d.shape() == s.shape();
  const DenseTensor src_model = run.pool[src].model;
  const absl::Status status = CopyInto(d, s);
  CheckStatus(run, status, valid ? Expect::kOk : Expect::kInvalidArgument, "CopyInto");
  if (!status.ok()) {
    CheckPool(run);
    return;
  }
  DenseTensor& model = run.pool[dst].model;
  for (size_t k = 0; k < model.bits.size(); ++k) {
    model.bits[k] = BitsOf(FloatOf(src_model.bits[k], s.dtype()), d.dtype());
  }
  ExpectModel(run, d, model, "CopyInto");
  DropOthersSharing(run, dst);
}

int FuzzOne(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Run run;
  for (int op = 0; op < kMaxOperations && in.remaining_bytes() > 0; ++op) {
    const int kind = in.ConsumeIntegralInRange(0, 11);
    if (kind <= 1 || run.pool.empty()) {
      kind == 1 ? HostileView(run, in) : Create(run, in);
    } else {
      const size_t i = in.ConsumeIntegralInRange<size_t>(0, run.pool.size() - 1);
      const size_t j = in.ConsumeIntegralInRange<size_t>(0, run.pool.size() - 1);
      switch (kind) {
        case 2:
          NarrowOp(run, in, i);
          break;
        case 3:
          TransposeOp(run, in, i);
          break;
        case 4:
          PermuteOp(run, in, i);
          break;
        case 5:
          ReshapeOp(run, in, i);
          break;
        case 6:
          ContiguousOp(run, i);
          break;
        case 7:
          CastOp(run, in, i);
          break;
        case 8:
          CatOp(run, in);
          break;
        case 9:
        case 10:
          SliceSetOp(run, in, i, j);
          break;
        default:
          CopyIntoOp(run, i, j);
          break;
      }
    }
    CheckPool(run);
  }
  return 0;
}

}  // namespace
}  // namespace kvcheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::FuzzOne(data, size);
}
