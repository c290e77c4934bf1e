// Data-socket options (transport/socket.h): the congestion control knob
// (KF_TCP_CONGESTION) is applied to a socket, and a choice the kernel
// refuses is a clear error naming the knob, before any connection.
#include "transport/socket.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kf {
namespace {

std::string congestion_of(int fd) {
  char name[32] = {};
  socklen_t len = sizeof(name);
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
  return std::string(name, strnlen(name, sizeof(name)));
}

TEST(Socket, EmptyCongestionLeavesTheSystemChoice) {
  EXPECT_TRUE(check_congestion("").is_ok());
  Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(fd.valid());
  const std::string before = congestion_of(fd.get());
  ASSERT_TRUE(tune_data_socket(fd.get(), 0, "").is_ok());
  EXPECT_EQ(congestion_of(fd.get()), before);
}

// reno is built into every kernel and always allowed (where the option
// exists at all: some sandboxed kernels lack TCP_CONGESTION).
TEST(Socket, CongestionIsApplied) {
  Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_TRUE(fd.valid());
  char probe[16] = {};
  socklen_t probe_len = sizeof(probe);
  if (::getsockopt(fd.get(), IPPROTO_TCP, TCP_CONGESTION, probe, &probe_len) != 0 &&
      errno == ENOPROTOOPT) {
    GTEST_SKIP() << "this kernel has no TCP_CONGESTION";
  }
  EXPECT_TRUE(check_congestion("reno").is_ok());
  ASSERT_TRUE(tune_data_socket(fd.get(), 0, "reno").is_ok());
  EXPECT_EQ(congestion_of(fd.get()), "reno");
}

TEST(Socket, UnknownCongestionIsAnInvalidArgument) {
  Status st = check_congestion("no-such-cc");
  EXPECT_EQ(st.code(), KF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find("KF_TCP_CONGESTION=no-such-cc"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("tcp_available_congestion_control"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace kf
