// The Attend command: attention over what a branch's cache shows, against the reference.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "properties/cache_machine_commands.h"
#include "properties/generators.h"
#include "properties/kernel_case.h"
#include "rapidcheck.h"
#include "reference/attention_comparison.h"
#include "reference/reference_attention.h"
#include "src/attention/flash_attention.h"
#include "src/attention/kernel_registry.h"
#include "src/cache/interleaved_cache.h"

namespace kvcheck::properties::cache_machine {

Attend::Attend(const Model& m) : branch_(PickBranch(m)) {
  const reference::CacheModel& branch = m.branches[branch_].model;
  RC_PRE(branch.shape().has_value());
  const reference::CacheShape& shape = *branch.shape();
  shape_ = shape;
  q_len_ = *Uniform<int64_t>(1, 5);
  q_ = *GenTensorSpec(m.dtype, {shape.batch, shape.num_kv_heads * m.query_group, q_len_,
                                shape.head_dim},
                      Values::kFinite, LayoutKind::kAny);
  // The reference is exact and slow: compare a few (batch row, KV head) groups, not all.
  for (int n = *Uniform(1, 4); n > 0; --n) {
    checked_.emplace_back(*Uniform<int64_t>(0, shape.batch),
                          *Uniform<int64_t>(0, shape.num_kv_heads));
  }
}

void Attend::checkPreconditions(const Model& m) const {
  RequireBranch(m, branch_);
  RC_PRE(m.branches[branch_].model.shape().has_value());
  RequireBranchShape(m, branch_, shape_);
}

void Attend::run(const Model& m, Sut& sut) const {
  const reference::CacheModel& branch = m.branches[branch_].model;
  const reference::CacheShape& shape = *branch.shape();
  const int64_t B = shape.batch, D = shape.head_dim, group = m.query_group;
  const int64_t H = shape.num_kv_heads * group;
  const absl::StatusOr<CacheView> viewed = sut.caches[branch_]->View();
  if (!viewed.ok()) RC_FAIL(absl::StrCat("View failed: ", viewed.status().ToString()));
  const CacheView& view = *viewed;
  // The queries are the newest q_len tokens of each row (bottom-right alignment).
  AttentionParams params;
  params.causal = true;
  params.window = m.window();
  params.kv_positions = view.positions;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < q_len_; ++i) {
      params.q_positions.push_back(branch.appended(b) - q_len_ + i);
    }
  }
  absl::StatusOr<Tensor> q = Materialize(q_);
  RC_ASSERT(q.ok());
  // Every registered kernel over the views the cache returned (their unused capacity is NaN
  // in test builds, so a kernel reading past a view's length shows), and the fused decode over
  // the interleaved cache's raw buffer.
  std::vector<std::pair<std::string, std::vector<float>>> outputs;
  for (const AttentionKernel& kernel : AttentionKernels()) {
    // The dispatcher stands for the kernels behind it; an emulated kernel's budget.
    if (kernel.behind_dispatcher || !kernel.admits(*q, view.k)) continue;
    const absl::StatusOr<Tensor> out = kernel.run(*q, view.k, view.v, params, 1);
    if (!out.ok()) RC_FAIL(absl::StrCat(kernel.name, " failed: ", out.status().ToString()));
    outputs.emplace_back(kernel.name, out->ToFloats());
  }
  if (const auto* interleaved = dynamic_cast<const InterleavedCache*>(sut.caches[branch_].get())) {
    const absl::StatusOr<Tensor> out =
        FlashAttentionInterleaved(*q, interleaved->InterleavedView(), params);
    if (!out.ok()) RC_FAIL(absl::StrCat("fused interleaved failed: ", out.status().ToString()));
    outputs.emplace_back("flash (fused interleaved)", out->ToFloats());
  }

  for (const auto& [b, kv_head] : checked_) {
    // The reference over the model's visible tokens (position order) of one row and group.
    const absl::Span<const reference::ModelToken> visible = branch.VisibleSpan(b);
    reference::AttentionProblem p;
    p.batch = 1;
    p.num_heads = group;
    p.num_kv_heads = 1;
    p.q_len = q_len_;
    p.kv_len = static_cast<int64_t>(visible.size());
    p.head_dim = D;
    p.causal = true;
    p.window = m.window();
    p.output_dtype = m.dtype;
    for (int64_t r = 0; r < group; ++r) {
      const int64_t h = kv_head * group + r;
      for (int64_t i = 0; i < q_len_; ++i) {
        for (int64_t d = 0; d < D; ++d) p.q.push_back(q_.values[((b * H + h) * q_len_ + i) * D + d]);
      }
    }
    for (const reference::ModelToken& token : visible) {
      p.kv_positions.push_back(token.position);
      for (int64_t d = 0; d < D; ++d) {
        p.k.push_back(FloatOf(token.k[kv_head * D + d], m.dtype));
        p.v.push_back(FloatOf(token.v[kv_head * D + d], m.dtype));
      }
    }
    for (int64_t i = 0; i < q_len_; ++i) p.q_positions.push_back(params.q_positions[b * q_len_ + i]);
    const reference::ReferenceAttention exact = reference::ComputeReferenceAttention(p);
    for (const auto& [kernel, all] : outputs) {
      // This group's rows of the kernel's (B, H, Sq, D) output.
      std::vector<float> actual;
      for (int64_t r = 0; r < group; ++r) {
        const int64_t first = ((b * H + kv_head * group + r) * q_len_) * D;
        actual.insert(actual.end(), all.begin() + first, all.begin() + first + q_len_ * D);
      }
      const reference::AttentionComparison comparison =
          reference::CompareAttention(actual, exact, {1, group, q_len_, D});
      if (!comparison.ok()) {
        RC_FAIL(absl::StrCat(kernel, " over branch ", branch_, ", batch row ", b, ", KV head ",
                             kv_head, ": ", comparison.first_violation, "\n  ",
                             DescribeRow(p, comparison.first_violation_element / D,
                                         actual[comparison.first_violation_element])));
      }
    }
  }
  // Viewing and attending change no counter.
  CheckCounters(m, sut, branch_, -1);
  NoteEvent(true, "attend");
}

void Attend::show(std::ostream& os) const {
  os << "Attend(branch " << branch_ << ", Sq=" << q_len_ << ", checking " << checked_.size()
     << " (row, KV head) groups)";
}

}  // namespace kvcheck::properties::cache_machine
