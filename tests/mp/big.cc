// Big all_reduce: 64 MiB of float32 and 64 MiB of int64, KF_SUM, out of
// place and in place, checked exactly (float inputs are small integers; int64
// inputs are large values whose sums wrap, checked with wraparound).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "data.h"
#include "mp_common.h"

namespace {

constexpr size_t kBytes = 64u << 20;

uint64_t big_value(int rank, uint64_t i) {
  return (i + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(rank) * 0xD1B54A32D192ED03ull);
}

int run_float(kf_comm_t comm, int rank, int n, bool inplace) {
  const uint64_t count = kBytes / sizeof(float);
  std::vector<float> send(count), recv(count, -1.0f);
  for (uint64_t i = 0; i < count; ++i)
    send[i] = static_cast<float>((i * 7 + static_cast<uint64_t>(rank) * 13) % 101);
  float* out = inplace ? send.data() : recv.data();
  const kf_status_t st = kf_all_reduce(comm, send.data(), out, count, KF_FLOAT32, KF_SUM);
  if (st != KF_SUCCESS) {
    std::printf("FAIL float32 %s: %s: %s\n", inplace ? "in-place" : "out-of-place",
                kf_status_string(st), kf_comm_last_error(comm));
    return 1;
  }
  uint64_t wrong = 0, first = 0;
  for (uint64_t i = 0; i < count; ++i) {
    float e = 0;
    for (int r = 0; r < n; ++r)
      e += static_cast<float>((i * 7 + static_cast<uint64_t>(r) * 13) % 101);
    if (out[i] != e && wrong++ == 0) first = i;
  }
  if (wrong) {
    float e = 0;
    for (int r = 0; r < n; ++r)
      e += static_cast<float>((first * 7 + static_cast<uint64_t>(r) * 13) % 101);
    std::printf("FAIL float32 %s: %" PRIu64 " wrong, first at [%" PRIu64 "]: expected %g got %g\n",
                inplace ? "in-place" : "out-of-place", wrong, first, e, out[first]);
    return 1;
  }
  std::printf("PASS float32 64 MiB sum %s\n", inplace ? "in-place" : "out-of-place");
  return 0;
}

int run_int64(kf_comm_t comm, int rank, int n, bool inplace) {
  const uint64_t count = kBytes / sizeof(int64_t);
  std::vector<int64_t> send(count), recv(count, -1);
  for (uint64_t i = 0; i < count; ++i) send[i] = static_cast<int64_t>(big_value(rank, i));
  int64_t* out = inplace ? send.data() : recv.data();
  const kf_status_t st = kf_all_reduce(comm, send.data(), out, count, KF_INT64, KF_SUM);
  if (st != KF_SUCCESS) {
    std::printf("FAIL int64 %s: %s: %s\n", inplace ? "in-place" : "out-of-place",
                kf_status_string(st), kf_comm_last_error(comm));
    return 1;
  }
  uint64_t wrong = 0, first = 0;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t e = 0;
    for (int r = 0; r < n; ++r) e += big_value(r, i);  // wraps, as the API specifies
    if (static_cast<uint64_t>(out[i]) != e && wrong++ == 0) first = i;
  }
  if (wrong) {
    uint64_t e = 0;
    for (int r = 0; r < n; ++r) e += big_value(r, first);
    std::printf("FAIL int64 %s: %" PRIu64 " wrong, first at [%" PRIu64 "]: expected %" PRId64
                " got %" PRId64 "\n",
                inplace ? "in-place" : "out-of-place", wrong, first, static_cast<int64_t>(e),
                out[first]);
    return 1;
  }
  std::printf("PASS int64 64 MiB sum %s\n", inplace ? "in-place" : "out-of-place");
  return 0;
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("big", &rank, &n);
  int failed = 0;
  failed += run_float(comm, rank, n, false);
  if (!failed) failed += run_float(comm, rank, n, true);
  if (!failed) failed += run_int64(comm, rank, n, false);
  if (!failed) failed += run_int64(comm, rank, n, true);
  kf_status_t st = kf_comm_destroy(comm);
  if (st != KF_SUCCESS) {
    std::printf("FAIL kf_comm_destroy: %s\n", kf_status_string(st));
    ++failed;
  }
  std::printf("rank %d/%d: %s\n", rank, n, failed ? "FAILED" : "all passed");
  return failed ? 1 : 0;
}
