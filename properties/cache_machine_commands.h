// File: cache_machine_commands.h
// The commands of the cache state machine (cache_machine.h). Each command draws its
// arguments from the model in its constructor (RapidCheck's execOneOfWithArgs), updates the
// model in apply(), and in run() drives the cache and checks it against the updated model.
#ifndef KVCHECK_PROPERTIES_CACHE_MACHINE_COMMANDS_H_
#define KVCHECK_PROPERTIES_CACHE_MACHINE_COMMANDS_H_

#include <cstdint>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "properties/cache_machine.h"
#include "properties/tensor_spec.h"
#include "rapidcheck/state.h"

namespace kvcheck::properties::cache_machine {

using Model = CacheMachineModel;
using Sut = CacheMachineSut;
using Command = rc::state::Command<Model, Sut>;

// Events of one command sequence worth showing in the distribution ("wrap", "growth", ...).
// Commands add to the set installed by the property for the duration of the sequence.
class EventScope {
 public:
  explicit EventScope(std::set<std::string>* events);
  ~EventScope();
};
void NoteEvent(bool happened, const char* event);

uint32_t BitsOf(float value, DType dtype);
float FloatOf(uint32_t bits, DType dtype);
// The element bits of a spec's values, row-major (what the cache model stores).
std::vector<uint32_t> SpecBits(const TensorSpec& spec);
// Shrinking removes commands, so a command's stored arguments must be re-checked against the
// state it will now run in: the branch must exist and (when set) have the expected shape.
void RequireBranch(const Model& m, int branch);
void RequireBranchShape(const Model& m, int branch, const reference::CacheShape& shape);

// The most tokens any batch row of `model` has received since reset.
int64_t MaxAppended(const reference::CacheModel& model);
int PickBranch(const Model& m);

// Prefill (S in [2, 24]), Decode (S = 1) and Grow (S past the current capacity).
class AppendTokens : public Command {
 public:
  enum class Kind { kPrefill, kDecode, kGrow };
  AppendTokens(const Model& m, Kind kind);
  void checkPreconditions(const Model& m) const override;
  void apply(Model& m) const override;
  void run(const Model& m0, Sut& sut) const override;
  void show(std::ostream& os) const override;

 private:
  Kind kind_;
  int branch_ = 0;
  reference::CacheShape shape_;
  int64_t seq_ = 1;
  TensorSpec k_, v_;
  absl::InlinedVector<bool, 4> active_;  // empty: every row
  bool into_kept_view_ = false;          // AppendInto the branch's kept view (else Append)
};

struct Prefill : AppendTokens {
  explicit Prefill(const Model& m) : AppendTokens(m, Kind::kPrefill) {}
};
struct Decode : AppendTokens {
  explicit Decode(const Model& m) : AppendTokens(m, Kind::kDecode) {}
};
struct Grow : AppendTokens {
  explicit Grow(const Model& m) : AppendTokens(m, Kind::kGrow) {}
};

class ResetBranch : public Command {
 public:
  explicit ResetBranch(const Model& m);
  void checkPreconditions(const Model& m) const override;
  void apply(Model& m) const override;
  void run(const Model& m0, Sut& sut) const override;
  void show(std::ostream& os) const override;

 private:
  int branch_;
};

class ForkBranch : public Command {
 public:
  explicit ForkBranch(const Model& m);
  void checkPreconditions(const Model& m) const override;
  void apply(Model& m) const override;
  void run(const Model& m0, Sut& sut) const override;
  void show(std::ostream& os) const override;

 private:
  int branch_;
};

// Random queries over what the branch's cache shows, through every registered attention
// kernel (and the fused interleaved decode over an interleaved cache's buffer), compared with
// the reference attention over the model's visible tokens (cache_machine_attend.cc).
class Attend : public Command {
 public:
  explicit Attend(const Model& m);
  void checkPreconditions(const Model& m) const override;
  void run(const Model& m0, Sut& sut) const override;
  void show(std::ostream& os) const override;

 private:
  int branch_;
  reference::CacheShape shape_;  // the shape the queries were drawn for
  int64_t q_len_;
  TensorSpec q_;                                  // (B, KH * group, Sq, D)
  std::vector<std::pair<int64_t, int64_t>> checked_;  // (batch row, KV head) pairs to compare
};

// An append that must fail with a specific code and change nothing
// (cache_machine_bad_append.cc).
class BadAppend : public Command {
 public:
  explicit BadAppend(const Model& m);
  void checkPreconditions(const Model& m) const override;
  void run(const Model& m0, Sut& sut) const override;
  void show(std::ostream& os) const override;

 private:
  int branch_;
  int kind_;
  int zero_dim_ = 0;  // the dimension set to 0 (kind "zero-size dim")
  // Kind "k/v shape mismatch" and "rank 3": the dimension of v that differs from k's (0-3, 4:
  // the dtype), and whether v (else k) is the wrong one.
  int mismatch_dim_ = 2;
  bool v_is_wrong_ = true;
  // Kind "bad active flags": one flag more, one fewer, or a false flag on a strategy with one
  // length for all rows.
  int flags_ = 0;
  bool into_kept_view_ = false;  // AppendInto the branch's kept view, which must not change
};

}  // namespace kvcheck::properties::cache_machine

#endif  // KVCHECK_PROPERTIES_CACHE_MACHINE_COMMANDS_H_
