// LaneLog: how the ranks of one host agree, through shared memory and
// without a coordinator, on one order of named operations.
//
// Every rank publishes what it submits as fixed-size records in a ring of
// its own (one producer, read by every other local rank). Decisions go to
// one shared log, kept in local rank 0's region: an entry names an
// operation (and a piece of it), and every rank processes the entries in
// log order. Any rank that sees something to decide appends it; appenders
// are ordered by a try-lock held for a few stores (a rank that dies holding
// it blocks appends, never a reader: the communicator's timeouts end it).
// A record or an entry is reused only once every rank has read it.
//
// The log knows bytes, not operations: sched/async_lane.h gives the
// records and entries their meaning.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kf {

// An operation as one rank submitted it (128 bytes), with room for the
// data of a tiny operation. The second cache line (the payload) travels only
// when payload_bytes > 0: a reader must not look at it otherwise.
struct LaneRecord {
  static constexpr size_t kPayloadBytes = 64;
  uint64_t name_hash = 0;
  uint64_t seq = 0;
  uint64_t count = 0;
  uint64_t partition_elems = 0;
  uint32_t kind = 0;
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t root = -1;
  int32_t strategy = -1;
  int32_t priority = 0;
  static constexpr uint16_t kHasDeadline = 1;  // flags: deadline_ms is set
  uint16_t payload_bytes = 0;                  // of payload in use, at most kPayloadBytes
  uint16_t flags = 0;
  uint32_t deadline_ms = 0;  // the submitter's deadline, monotonic clock in ms (wraps)
  unsigned char payload[kPayloadBytes] = {};
};
static_assert(sizeof(LaneRecord) == 128, "two cache lines");
static_assert(offsetof(LaneRecord, payload) == 64, "the payload starts the second cache line");

// Copies the record `src` to `dst`: its first cache line, and the payload's
// only if in use (each line copied is one a cache may have to fetch).
inline void copy_record(LaneRecord* dst, const LaneRecord& src) {
  std::memcpy(static_cast<void*>(dst), &src, offsetof(LaneRecord, payload));
  if (src.payload_bytes > 0) std::memcpy(dst->payload, src.payload, LaneRecord::kPayloadBytes);
}

// A decision every rank processes in log order (32 bytes).
struct LaneEntry {
  uint64_t name_hash = 0;
  uint64_t seq = 0;
  uint32_t part = 0;  // the piece of the operation
  uint32_t verb = 0;  // its meaning is the user's
  uint64_t reserved = 0;
};
static_assert(sizeof(LaneEntry) == 32, "half a cache line");

class LaneLog {
 public:
  static constexpr uint64_t kRecords = 1024;  // per rank's ring
  static constexpr uint64_t kEntries = 1024;  // in the log
  static constexpr size_t kMaxBatch = 64;     // entries appended at once, at most

  // Bytes of one rank's region for `local_size` local ranks (a multiple of
  // 64). A region must be zeroed before first use.
  static size_t region_bytes(int local_size);

  // `regions`: every local rank's region, mapped here, by local index;
  // `me`: this rank's local index.
  LaneLog(std::vector<char*> regions, int me);

  int size() const { return static_cast<int>(regions_.size()); }
  int me() const { return me_; }

  // Publishes a record in this rank's ring. False when the ring is full (a
  // peer has not read the record kRecords back yet): try again later.
  // One thread at a time.
  bool publish(const LaneRecord& r);
  // Takes the next unread record of local rank `local`'s ring. One thread
  // at a time.
  bool take(int local, LaneRecord* out);

  // Entry `pos` of the log, if it has been appended.
  bool entry(uint64_t pos, LaneEntry* out) const;
  // Appends `e` as entry `pos`: only if the log holds exactly `pos` entries
  // and every rank has processed entry pos - kEntries. False otherwise
  // (someone appended first, a rank lags, or the lock is held): read the
  // log again. One thread at a time.
  bool append(uint64_t pos, const LaneEntry& e) { return append(pos, &e, 1); }
  // Appends the `n` entries `e` (1 <= n <= kMaxBatch) as entries pos ..
  // pos + n - 1, all at once: a reader that sees entry pos sees them all.
  // The same conditions, for each of them.
  bool append(uint64_t pos, const LaneEntry* e, size_t n);
  // This rank has processed entries [0, pos).
  void processed(uint64_t pos);
  // Whether anything is new for a reader at log position `pos`: an entry
  // to process or a peer's record to take (for the check before sleeping).
  bool news(uint64_t pos) const;

 private:
  struct Header;
  struct LogHeader;
  Header* header(int local) const;
  std::atomic<uint64_t>* read_of(int reader, int writer) const;
  LaneRecord* records(int local) const;
  LogHeader* log() const;
  LaneEntry* entries() const;

  std::vector<char*> regions_;
  int me_;
  static constexpr uint64_t kTakeAhead = 16;  // records take() prefetches ahead
  std::vector<uint64_t> next_take_;  // per writer: the next record to take
  std::vector<uint64_t> prefetched_;  // per writer: records below this were prefetched
  uint64_t slowest_read_ = 0;        // the readers' slowest cursor at publish()'s last look
  uint64_t slowest_processed_ = 0;   // the ranks' slowest log position at append()'s last look
};

}  // namespace kf
