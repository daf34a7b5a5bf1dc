// File: process_engine.h
// ProcessEngine: an engine in a child process, spoken to over its stdin and stdout with the
// protocol of PROTOCOL.md (`kvcheck --engine='python3 my_engine.py'`).
//
// Start runs the command and the handshake (hello: protocol version, strategies, kernels).
// Every call then writes one request and reads one reply within the per-call timeout. A
// misbehaving engine is an error of the call, never of kvcheck:
//   - it exits or crashes: kUnavailable, naming the operation, the exit status or signal and
//     the end of its stderr;
//   - it hangs: kDeadlineExceeded after the timeout (its process group is killed);
//   - its reply is malformed: kInternal naming the field.
// After such an error the transport is out of step with the engine: later calls fail with
// the same error until RestartIfNeeded (which the case isolation's after_case hook calls
// between cases) starts it again.
//
// Forked cases: the engine is started by the process that calls Start; a forked case talks
// to it over the inherited pipes (calls are strictly one request, one reply, so a case that
// returns leaves nothing unread). After a case that crashed or timed out mid-call, the
// stream's state is unknown, so RestartIfNeeded restarts the engine.
#ifndef KVCHECK_SRC_ENGINE_PROCESS_ENGINE_H_
#define KVCHECK_SRC_ENGINE_PROCESS_ENGINE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/engine/child_process.h"
#include "src/engine/engine.h"
#include "src/engine/engine_wire.h"

namespace kvcheck::engine {

class ProcessEngine : public Engine {
 public:
  struct Options {
    double timeout_seconds = 30;  // per call (the handshake: at least kStartupSeconds)
  };
  // The least time the handshake gets, however short the per-call timeout: an interpreter
  // that imports numpy before it can answer took over 2 s on a loaded 2-core CI machine
  // (--engine_timeout=2 in the broken-engine tests, which need a short timeout for their
  // hangs, failed there at "hello").
  static constexpr double kStartupSeconds = 30;
  // Errors: those of ChildProcess::Start; the handshake's (kUnavailable, kDeadlineExceeded,
  // kInternal for a malformed hello, kFailedPrecondition for another protocol version).
  static absl::StatusOr<std::unique_ptr<ProcessEngine>> Start(const std::string& command,
                                                              Options options);
  ~ProcessEngine() override;

  const EngineInfo& info() const override { return info_; }
  std::string description() const override;

  absl::StatusOr<CacheHandle> CreateCache(int strategy, const CacheConfig& config) override;
  absl::StatusOr<CacheView> Append(CacheHandle cache, const Tensor& k, const Tensor& v,
                                   absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> View(CacheHandle cache, const KvShape& shape) override;
  absl::StatusOr<CacheHandle> Fork(CacheHandle cache) override;
  absl::Status Reset(CacheHandle cache) override;
  absl::StatusOr<CacheStats> Stats(CacheHandle cache) override;
  void Destroy(CacheHandle cache) override;
  absl::StatusOr<Tensor> Attend(int kernel, const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params) override;

  absl::StatusOr<SessionHandle> CreateStepper(int stepper, int64_t window) override;
  absl::StatusOr<Tensor> Step(SessionHandle stepper, const Tensor& q, const Tensor& k_new,
                              const Tensor& v_new) override;
  absl::Status ResetStepper(SessionHandle stepper) override;
  void DestroyStepper(SessionHandle stepper) override;
  absl::StatusOr<SessionHandle> CreateModel(int model) override;
  absl::StatusOr<std::vector<float>> Forward(SessionHandle model, absl::Span<const int64_t> tokens,
                                             int64_t batch, int64_t seq, bool use_cache) override;
  absl::Status ResetModel(SessionHandle model) override;
  void DestroyModel(SessionHandle model) override;

  // Restarts the engine when `always`, when it has exited, or after `end` says a case died
  // mid-call. Errors: those of Start (the engine is then left stopped, and every call fails).
  absl::Status RestartIfNeeded(bool always, bool case_crashed);
  int restarts() const { return restarts_; }

 private:
  ProcessEngine(std::string command, Options options)
      : command_(std::move(command)), options_(options) {}
  absl::Status Launch();
  // One request and its reply (the reply's "ok" checked) within `timeout_seconds` (the
  // per-call timeout when negative). `what` names the operation.
  absl::StatusOr<WireMessage> Call(const WireMessage& request, const std::string& what,
                                   double timeout_seconds = -1);
  // A call whose reply names a new object by an integer id in `field` (create, fork,
  // stepper_create, model_create); a missing or mistyped id is a transport error.
  absl::StatusOr<uint64_t> CallForId(const WireMessage& request, const char* field,
                                     const std::string& what);
  // The view in a reply to append / view.
  absl::StatusOr<CacheView> ViewFrom(const WireMessage& reply, const KvShape& shape,
                                     const std::string& what);
  // A transport failure, completed with how the engine ended and its stderr.
  // `timeout_seconds`: the deadline the call had (the per-call timeout when negative).
  absl::Status TransportError(const absl::Status& status, const std::string& what,
                              double timeout_seconds = -1);

  std::string command_;
  Options options_;
  std::unique_ptr<ChildProcess> child_;
  EngineInfo info_;
  absl::Status broken_;  // the transport error that put the stream out of step
  // Set by a transport error in any process (a forked case shares this page with the process
  // that started the engine), so that RestartIfNeeded knows the engine needs restarting even
  // though the error happened in a case's child.
  volatile int* shared_broken_ = nullptr;
  int restarts_ = 0;
};

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_PROCESS_ENGINE_H_
