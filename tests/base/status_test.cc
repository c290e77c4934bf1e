#include "base/status.h"

#include <gtest/gtest.h>

#include <utility>

namespace kf {
namespace {

// Copies and assignments keep the code and the message whichever side is
// empty (copies skip the string only while both messages are empty).
TEST(Status, CopiesAndAssignsCodeAndMessage) {
  const Status ok = Status::ok();
  const Status bad = invalid_usage("op 'x': ranks called it with different arguments");

  Status a(bad);
  EXPECT_EQ(a.code(), KF_ERR_INVALID_USAGE);
  EXPECT_EQ(a.message(), bad.message());
  Status b(ok);
  EXPECT_TRUE(b.is_ok());
  EXPECT_TRUE(b.message().empty());

  b = bad;  // empty <- message
  EXPECT_EQ(b.code(), KF_ERR_INVALID_USAGE);
  EXPECT_EQ(b.message(), bad.message());
  b = ok;  // message <- empty: the old message goes
  EXPECT_TRUE(b.is_ok());
  EXPECT_TRUE(b.message().empty());
  b = ok;  // empty <- empty
  EXPECT_TRUE(b.is_ok());
  const Status coded(KF_ERR_TIMEOUT, "");  // an error without a message: only its code copies
  b = coded;
  EXPECT_EQ(b.code(), KF_ERR_TIMEOUT);
  EXPECT_TRUE(b.message().empty());
  Status c(coded);
  EXPECT_EQ(c.code(), KF_ERR_TIMEOUT);
  b = ok;
  EXPECT_TRUE(b.is_ok());
  a = timeout_error("late");  // message <- message
  EXPECT_EQ(a.code(), KF_ERR_TIMEOUT);
  EXPECT_EQ(a.message(), "late");
  const Status& self = a;
  a = self;
  EXPECT_EQ(a.message(), "late");

  Status moved(std::move(a));
  EXPECT_EQ(moved.code(), KF_ERR_TIMEOUT);
  EXPECT_EQ(moved.message(), "late");
  b = std::move(moved);
  EXPECT_EQ(b.message(), "late");
}

}  // namespace
}  // namespace kf
