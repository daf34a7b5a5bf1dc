// File: status_macros.h
// Propagation macros for absl::Status / absl::StatusOr.
//
// Abseil 20220623 (Debian bookworm) predates ABSL_RETURN_IF_ERROR and ABSL_ASSIGN_OR_RETURN,
// so kvcheck keeps this one small header. When the project moves to an Abseil that has them,
// these become aliases.
//
//   KV_RETURN_IF_ERROR(DoThing());             // returns the Status if not OK
//   KV_ASSIGN_OR_RETURN(Tensor t, MakeThing()); // declares t, or returns the error
#ifndef KVCHECK_SRC_BASE_STATUS_MACROS_H_
#define KVCHECK_SRC_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KV_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    const absl::Status kv_status_ = (expr);       \
    if (!kv_status_.ok()) return kv_status_;      \
  } while (false)

#define KV_STATUS_CONCAT_INNER_(a, b) a##b
#define KV_STATUS_CONCAT_(a, b) KV_STATUS_CONCAT_INNER_(a, b)

#define KV_ASSIGN_OR_RETURN(lhs, expr) \
  KV_ASSIGN_OR_RETURN_IMPL_(KV_STATUS_CONCAT_(kv_statusor_, __LINE__), lhs, expr)

#define KV_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = std::move(statusor).value()

#endif  // KVCHECK_SRC_BASE_STATUS_MACROS_H_
