// File: status_matchers.h
// gMock matchers for absl::Status and absl::StatusOr (Abseil 20220623 has none).
//
//   EXPECT_THAT(Narrow(t, 5, 0, 1), StatusIs(absl::StatusCode::kInvalidArgument));
//   EXPECT_THAT(s, StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("dimension 2")));
//   EXPECT_OK(status_or);  ASSERT_OK(status);
// Prefer asserting the exact code over a bare "not OK".
#ifndef KVCHECK_TESTING_STATUS_MATCHERS_H_
#define KVCHECK_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvcheck::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER_P2(StatusIsImpl, code, message_matcher,
           "has status code " + std::string(absl::StatusCodeToString(code))) {
  const absl::Status& status = ::kvcheck::testing::GetStatus(arg);
  if (status.code() != code) {
    *result_listener << "whose status is " << status.ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

inline auto StatusIs(absl::StatusCode code) { return StatusIsImpl(code, ::testing::_); }

template <typename MessageMatcher>
auto StatusIs(absl::StatusCode code, MessageMatcher message_matcher) {
  return StatusIsImpl(code, ::testing::MatcherCast<std::string>(message_matcher));
}

}  // namespace kvcheck::testing

// Each evaluates `expr` once.
#define EXPECT_OK(expr)                                                           \
  do {                                                                            \
    const auto& kv_expect_ok_ = (expr);                                           \
    EXPECT_TRUE(::kvcheck::testing::GetStatus(kv_expect_ok_).ok())                \
        << ::kvcheck::testing::GetStatus(kv_expect_ok_).ToString();               \
  } while (false)
#define ASSERT_OK(expr)                                                           \
  do {                                                                            \
    const auto& kv_assert_ok_ = (expr);                                           \
    ASSERT_TRUE(::kvcheck::testing::GetStatus(kv_assert_ok_).ok())                \
        << ::kvcheck::testing::GetStatus(kv_assert_ok_).ToString();               \
  } while (false)

#endif  // KVCHECK_TESTING_STATUS_MATCHERS_H_
