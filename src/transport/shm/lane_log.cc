#include "transport/shm/lane_log.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace kf {

// Region layout: Header, one read cursor per writer (each on its own cache
// line), the record ring, LogHeader and the entries (used in local rank 0's
// region only).
struct alignas(64) LaneLog::Header {
  std::atomic<uint64_t> published{0};  // records written to this rank's ring
  char pad1[56];
  std::atomic<uint64_t> processed{0};  // log entries this rank has processed
  char pad2[56];
};

// The appenders' lock has a line of its own: an appender's attempt does not
// disturb the readers polling the length.
struct alignas(64) LaneLog::LogHeader {
  std::atomic<uint64_t> length{0};  // entries appended
  char pad1[56];
  std::atomic<uint32_t> lock{0};
  char pad2[60];
};

namespace {
constexpr size_t kCursorBytes = 64;
}  // namespace

static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free,
              "shared cursors must be lock free");

size_t LaneLog::region_bytes(int local_size) {
  return sizeof(Header) + static_cast<size_t>(local_size) * kCursorBytes +
         kRecords * sizeof(LaneRecord) + sizeof(LogHeader) + kEntries * sizeof(LaneEntry);
}

LaneLog::LaneLog(std::vector<char*> regions, int me)
    : regions_(std::move(regions)),
      me_(me),
      next_take_(regions_.size(), 0),
      prefetched_(regions_.size(), 0) {}

LaneLog::Header* LaneLog::header(int local) const {
  return reinterpret_cast<Header*>(regions_[static_cast<size_t>(local)]);
}

std::atomic<uint64_t>* LaneLog::read_of(int reader, int writer) const {
  return reinterpret_cast<std::atomic<uint64_t>*>(regions_[static_cast<size_t>(reader)] +
                                                  sizeof(Header) +
                                                  static_cast<size_t>(writer) * kCursorBytes);
}

LaneRecord* LaneLog::records(int local) const {
  return reinterpret_cast<LaneRecord*>(regions_[static_cast<size_t>(local)] + sizeof(Header) +
                                       regions_.size() * kCursorBytes);
}

LaneLog::LogHeader* LaneLog::log() const {
  return reinterpret_cast<LogHeader*>(reinterpret_cast<char*>(records(0)) +
                                      kRecords * sizeof(LaneRecord));
}

LaneEntry* LaneLog::entries() const {
  return reinterpret_cast<LaneEntry*>(log() + 1);
}

bool LaneLog::publish(const LaneRecord& r) {
  Header* h = header(me_);
  const uint64_t n = h->published.load(std::memory_order_relaxed);
  // The readers' cursors are read only when the last reading does not show
  // room: each reading pulls a cache line a reader writes at every take.
  if (n - slowest_read_ >= kRecords) {
    uint64_t slowest = n;
    for (int j = 0; j < size(); ++j) {
      if (j != me_) slowest = std::min(slowest, read_of(j, me_)->load(std::memory_order_acquire));
    }
    slowest_read_ = slowest;
    if (n - slowest >= kRecords) return false;
  }
  // (The payload line only if in use: each line written here is one a
  // reader's cache must fetch from ours.)
  copy_record(&records(me_)[n % kRecords], r);
  h->published.store(n + 1, std::memory_order_release);
  // The next record's slot, for writing: a burst publishes one per tensor,
  // and a reader took this line from us since we last wrote it.
  __builtin_prefetch(&records(me_)[(n + 1) % kRecords], 1);
  return true;
}

bool LaneLog::take(int local, LaneRecord* out) {
  uint64_t& next = next_take_[static_cast<size_t>(local)];
  const uint64_t published = header(local)->published.load(std::memory_order_acquire);
  if (published <= next) return false;
  // The records published after this one are fetched meanwhile (a driver
  // takes a burst's records one after another, each a line from another
  // core): up to kTakeAhead ahead, each asked for once.
  uint64_t& ahead = prefetched_[static_cast<size_t>(local)];
  const uint64_t until = std::min(published, next + 1 + kTakeAhead);
  for (ahead = std::max(ahead, next + 1); ahead < until; ++ahead) {
    __builtin_prefetch(&records(local)[ahead % kRecords]);
  }
  const LaneRecord& slot = records(local)[next % kRecords];
  copy_record(out, slot);
  ++next;
  read_of(me_, local)->store(next, std::memory_order_release);
  return true;
}

bool LaneLog::entry(uint64_t pos, LaneEntry* out) const {
  if (log()->length.load(std::memory_order_acquire) <= pos) return false;
  std::memcpy(out, &entries()[pos % kEntries], sizeof(*out));
  return true;
}

bool LaneLog::append(uint64_t pos, const LaneEntry* e, size_t n) {
  if (n == 0 || n > kMaxBatch) return false;
  LogHeader* lg = log();
  if (lg->length.load(std::memory_order_acquire) != pos) return false;
  // The ranks' positions are read only when the last reading does not show
  // room (each rank writes its own at every entry): see publish().
  const uint64_t last = pos + n - 1;
  if (last - slowest_processed_ >= kEntries) {
    uint64_t slowest = pos;
    for (int j = 0; j < size(); ++j) {
      slowest = std::min(slowest, header(j)->processed.load(std::memory_order_acquire));
    }
    slowest_processed_ = slowest;
    if (last - slowest >= kEntries) return false;
  }
  uint32_t unlocked = 0;
  if (!lg->lock.compare_exchange_strong(unlocked, 1, std::memory_order_acquire)) return false;
  const bool ours = lg->length.load(std::memory_order_relaxed) == pos;
  if (ours) {
    for (size_t i = 0; i < n; ++i) std::memcpy(&entries()[(pos + i) % kEntries], &e[i], sizeof(*e));
    lg->length.store(pos + n, std::memory_order_release);
  }
  lg->lock.store(0, std::memory_order_release);
  return ours;
}

void LaneLog::processed(uint64_t pos) {
  header(me_)->processed.store(pos, std::memory_order_release);
}

bool LaneLog::news(uint64_t pos) const {
  if (log()->length.load(std::memory_order_acquire) > pos) return true;
  for (int j = 0; j < size(); ++j) {
    if (j != me_ &&
        header(j)->published.load(std::memory_order_acquire) > next_take_[static_cast<size_t>(j)]) {
      return true;
    }
  }
  return false;
}

}  // namespace kf
