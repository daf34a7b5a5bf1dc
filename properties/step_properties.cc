// The stepper law (step_properties.h).
#include "properties/step_properties.h"

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "properties/kernel_case.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "reference/attention_comparison.h"
#include "reference/attention_problem.h"
#include "reference/reference_attention.h"
#include "src/engine/engine.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::properties {
namespace {

// The shapes a generation fixes until its reset.
struct StepShape {
  int64_t batch = 1, num_heads = 1, num_kv_heads = 1, head_dim = 1;
};

// One operation: a step of `seq` tokens whose q, k and v come from `seed`, or a reset that
// starts a generation of shape `shape`.
struct StepOp {
  bool reset = false;
  StepShape shape;      // reset only
  int64_t seq = 1;      // step only
  uint64_t seed = 0;    // step only
  bool transposed = false;  // step only: inputs are (B, S, H, D) buffers viewed as (B, H, S, D)
};

struct StepCase {
  DType dtype = DType::kF32;
  int64_t window = 0;  // 0: not windowed
  StepShape first;
  std::vector<StepOp> ops;
};

void Show(const StepShape& s, std::ostream& os) {
  os << "B=" << s.batch << " H=" << s.num_heads << " KH=" << s.num_kv_heads
     << " D=" << s.head_dim;
}

void showValue(const StepCase& c, std::ostream& os) {
  os << DTypeName(c.dtype);
  if (c.window > 0) os << ", window W=" << c.window;
  os << ", ";
  Show(c.first, os);
  os << "; operations:";
  for (const StepOp& op : c.ops) {
    if (op.reset) {
      os << " Reset(";
      Show(op.shape, os);
      os << ")";
    } else {
      os << " Step(S=" << op.seq << (op.transposed ? ", transposed inputs" : "") << ")";
    }
  }
}

rc::Gen<StepShape> GenStepShape(bool gqa) {
  return rc::gen::exec([gqa] {
    StepShape s;
    s.batch = *Uniform<int64_t>(1, 4);
    s.num_kv_heads = *Uniform<int64_t>(1, 4);
    const int64_t group = *Uniform<int64_t>(1, 4);  // drawn even without GQA: later draws stay
    s.num_heads = s.num_kv_heads * (gqa ? group : 1);
    // Vector widths and their tails (the attention kernels' own boundaries), smallest first.
    s.head_dim = *Choice<int64_t>(1, 2, 3, 4, 8, 16, 17, 32, 64);
    return s;
  });
}

// One operation as drawn: every part is drawn whatever the others give, so that an operation
// that shrinks (a reset to a step, a long chunk to one token) leaves the operations after it
// as they were.
struct OpDraw {
  bool reset = false;
  bool new_shape = false;  // the reset starts a generation of `shape` (else the first one's)
  StepShape shape;
  bool long_chunk = false;
  int64_t chunk = 1;
  uint64_t seed = 0;
  bool transposed = false;
};

rc::Gen<OpDraw> GenOpDraw(bool gqa, std::vector<int64_t> chunks) {
  return rc::gen::exec([gqa, chunks] {
    OpDraw op;
    op.reset = Sometimes(12);
    op.new_shape = Sometimes(50);
    op.shape = *GenStepShape(gqa);
    op.long_chunk = Sometimes(33);
    op.chunk = *ChoiceOf(chunks);
    op.seed = *rc::gen::arbitrary<uint64_t>();
    op.transposed = Sometimes(25);
    return op;
  });
}

rc::Gen<StepCase> GenStepCase(const engine::StepperInfo& info, DType dtype) {
  return rc::gen::exec([&info, dtype] {
    StepCase c;
    c.dtype = dtype;
    const bool windowed = (info.flags & KVCHECK_STEPPER_WINDOWED) != 0;
    const bool gqa = (info.flags & KVCHECK_STEPPER_GQA) != 0;
    const bool resets = (info.flags & KVCHECK_STEPPER_RESET) != 0;
    // Smallest first, the stepper's own W last: a window shrinks to 1.
    const int64_t window = *ChoiceOf(std::vector<int64_t>{1, 2, 3, 5, 8, info.window});
    if (windowed) c.window = window;
    c.first = *GenStepShape(gqa);
    // Chunk lengths at and around the window (a chunk longer than W is the classic overflow),
    // else a few tile-ish sizes; decode-size steps dominate, as in generation.
    const int64_t w = std::max<int64_t>(c.window, 4);
    // A list RapidCheck shrinks by removing any of its operations (not only the last ones),
    // of which the first 11 are used.
    const std::vector<OpDraw> drawn = *rc::gen::container<std::vector<OpDraw>>(
        GenOpDraw(gqa, {2, 3, w - 1, w, w + 1, 2 * w + 1}));
    int64_t total = 0;       // tokens since the reset: the exact reference stays cheap
    bool stepped = false;    // a step since the last reset
    int generation = -1;     // the op that started the current generation; -1: c.first
    for (const OpDraw& d : drawn) {
      if (total >= 64 || c.ops.size() >= 11) break;
      StepOp op;
      if (resets && d.reset) {
        const StepShape shape = d.new_shape ? d.shape : c.first;
        if (!stepped) {
          // A reset of an empty stepper does nothing: its shape is the generation's.
          (generation < 0 ? c.first : c.ops[generation].shape) = shape;
          continue;
        }
        op.reset = true;
        op.shape = shape;
        total = 0;
        stepped = false;
        c.ops.push_back(op);
        generation = static_cast<int>(c.ops.size()) - 1;
        continue;
      }
      op.seq = d.long_chunk ? d.chunk : 1;
      op.seq = std::max<int64_t>(1, std::min<int64_t>(op.seq, 64 - total));
      total += op.seq;
      stepped = true;
      op.seed = d.seed;
      op.transposed = d.transposed;
      c.ops.push_back(op);
    }
    return c;
  });
}

// q (or k / v) of a step: its values and the tensor the stepper gets.
struct StepInput {
  std::vector<float> values;  // (B, heads, S, D) row-major
  Tensor tensor;
};

StepInput MakeInput(const StepCase& c, const StepOp& op, const StepShape& s, int64_t heads,
                    uint64_t salt) {
  StepInput in;
  const std::vector<int64_t> shape = {s.batch, heads, op.seq, s.head_dim};
  in.values = SeededValues(op.seed ^ salt, s.batch * heads * op.seq * s.head_dim, 1.0f, c.dtype);
  TensorSpec spec = TensorSpec::Contiguous(c.dtype, shape, in.values);
  if (op.transposed) spec.buffer_order = {0, 2, 1, 3};
  absl::StatusOr<Tensor> t = Materialize(spec);
  RC_ASSERT(t.ok());
  in.tensor = *std::move(t);
  return in;
}

// The stepper session of a case; destroyed when the case ends however it ends.
class StepperSession {
 public:
  StepperSession(engine::Engine& engine, int index, int64_t window) : engine_(engine) {
    absl::StatusOr<engine::SessionHandle> made = engine.CreateStepper(index, window);
    if (!made.ok()) RC_FAIL(absl::StrCat("stepper_create: ", made.status().ToString()));
    handle_ = *made;
  }
  ~StepperSession() { engine_.DestroyStepper(handle_); }
  engine::SessionHandle handle() const { return handle_; }

 private:
  engine::Engine& engine_;
  engine::SessionHandle handle_ = 0;
};

void RunStepCase(engine::Engine& engine, int index, const StepCase& c) {
  StepperSession session(engine, index, c.window);
  StepShape shape = c.first;
  // The history since the reset, per (b, kh): token-major rows of D values.
  std::vector<std::vector<float>> k_history, v_history;
  int64_t length = 0;
  const auto clear = [&] {
    k_history.assign(shape.batch * shape.num_kv_heads, {});
    v_history.assign(shape.batch * shape.num_kv_heads, {});
    length = 0;
  };
  clear();
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const StepOp& op = c.ops[i];
    const std::string at = absl::StrCat("operation ", i + 1, " of ", c.ops.size());
    NoteStep(at);
    if (op.reset) {
      const absl::Status reset = engine.ResetStepper(session.handle());
      if (!reset.ok()) RC_FAIL(absl::StrCat(at, ": stepper_reset: ", reset.ToString()));
      shape = op.shape;
      clear();
      continue;
    }
    const StepInput q = MakeInput(c, op, shape, shape.num_heads, 0x71);
    const StepInput k = MakeInput(c, op, shape, shape.num_kv_heads, 0x6b);
    const StepInput v = MakeInput(c, op, shape, shape.num_kv_heads, 0x76);
    const absl::StatusOr<Tensor> out = engine.Step(session.handle(), q.tensor, k.tensor, v.tensor);
    if (!out.ok()) {
      RC_FAIL(absl::StrCat(at, ": Step(S=", op.seq, ") after ", length,
                           " tokens failed: ", out.status().ToString()));
    }
    // Extend the history, then ask the reference for the step's expected output.
    const int64_t D = shape.head_dim;
    for (int64_t row = 0; row < shape.batch * shape.num_kv_heads; ++row) {
      const auto first = [&](const std::vector<float>& values) {
        return values.begin() + row * op.seq * D;
      };
      k_history[row].insert(k_history[row].end(), first(k.values), first(k.values) + op.seq * D);
      v_history[row].insert(v_history[row].end(), first(v.values), first(v.values) + op.seq * D);
    }
    length += op.seq;
    reference::AttentionProblem p;
    p.batch = shape.batch;
    p.num_heads = shape.num_heads;
    p.num_kv_heads = shape.num_kv_heads;
    p.q_len = op.seq;
    p.kv_len = length;  // default positions: query i at length - S + i, the step's P + i
    p.head_dim = D;
    p.q = q.values;
    for (int64_t row = 0; row < shape.batch * shape.num_kv_heads; ++row) {
      p.k.insert(p.k.end(), k_history[row].begin(), k_history[row].end());
      p.v.insert(p.v.end(), v_history[row].begin(), v_history[row].end());
    }
    p.causal = true;
    p.window = c.window;
    p.output_dtype = c.dtype;
    const reference::ReferenceAttention exact = reference::ComputeReferenceAttention(p);
    const std::vector<float> actual = out->ToFloats();
    const reference::AttentionComparison comparison =
        reference::CompareAttention(actual, exact, {p.batch, p.num_heads, p.q_len, D});
    if (!comparison.ok()) {
      RC_FAIL(absl::StrCat(at, ": Step(S=", op.seq, ") after ", length - op.seq,
                           " tokens is not the causal attention over the history",
                           c.window > 0 ? absl::StrCat(" (window ", c.window, ")") : "", ": ",
                           comparison.first_violation, "\n  ",
                           DescribeRow(p, comparison.first_violation_element / D,
                                       actual[comparison.first_violation_element])));
    }
    RC_CLASSIFY(c.window > 0 && length > c.window, "history longer than the window");
    RC_CLASSIFY(c.window > 0 && op.seq > c.window, "chunk longer than the window");
  }
}

}  // namespace

std::vector<PropertySpec> StepProperties(const Subject& subject) {
  std::vector<PropertySpec> specs;
  if (subject.engine == nullptr) return specs;
  engine::Engine* engine = subject.engine.get();
  const std::vector<engine::StepperInfo>& steppers = engine->info().steppers;
  for (size_t index = 0; index < steppers.size(); ++index) {
    const engine::StepperInfo* info = &steppers[index];
    for (DType dtype : kAllDTypes) {
      if ((info->dtypes & (1u << static_cast<int>(dtype))) == 0) continue;
      PropertySpec spec{absl::StrCat("step/", info->name, "/", DTypeName(dtype)), 100,
                        [engine, info, index, dtype] {
                          const StepCase c = *GenStepCase(*info, dtype);
                          RunIsolated([&] { RunStepCase(*engine, static_cast<int>(index), c); });
                        }};
      spec.dtype = DTypeName(dtype);  // --dtype selects it
      specs.push_back(std::move(spec));
    }
  }
  return specs;
}

}  // namespace kvcheck::properties
