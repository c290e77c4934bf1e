#include "transport/shm/shm_transport.h"

#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/cpu_relax.h"
#include "base/log.h"

namespace kf {
namespace {

constexpr uint64_t kSegmentMagic = 0x314d48534b46ull;  // "KFSHM1"

// One staging area's shared state (see kStagingAreas).
struct alignas(64) AreaHeader {
  RingCursor arrived;  // barriers of this area this rank has entered
  // Single-copy reads: an address in this rank's memory that peers may read
  // with process_vm_readv (set per operation).
  std::atomic<uint64_t> exposed;
  // Signature digest of the current operation, per staging buffer.
  std::atomic<uint32_t> digest[2];
};

struct SegmentHeader {
  uint64_t magic;
  uint64_t ring_bytes;
  uint64_t slots;
  uint64_t staging_bytes;
  uint64_t lane_bytes;
  char pad[24];
  Doorbell bell;
  int64_t pid;     // for single-copy reads
  uint64_t probe;  // a known value at a known address, for the start-up probe
  AreaHeader area[ShmTransport::kStagingAreas];
};
static_assert(sizeof(SegmentHeader) % 64 == 0, "cache-line aligned");

// How long a waiter polls before it sleeps on its doorbell.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr auto kSpinOversubscribed = std::chrono::microseconds(2);
// Upper bound of one sleep, so a lost wake-up costs at most this much.
constexpr int kSleepMs = 100;

}  // namespace

struct ShmTransport::Conn {
  Conn(int peer_rank, uint32_t epoch, Mailbox* mailbox, RingWriter w, RingReader r, Doorbell* b)
      : peer(peer_rank), out(w), in(r), peer_bell(b),
        reader(peer_rank, epoch, mailbox, FrameReader::Hooks{}) {}

  const int peer;
  RingWriter out;
  RingReader in;
  Doorbell* const peer_bell;  // in the peer's segment

  std::mutex send_mu;
  SendQueue queue;  // guarded by send_mu
  std::mutex recv_mu;
  FrameReader reader;   // guarded by recv_mu
  bool broken = false;  // guarded by recv_mu
  // reader.paused() as of the last pump, for progress() to decide without
  // the lock whether a pump is worth trying.
  std::atomic<bool> reader_paused{false};

  // Writes what fits and rings the peer if anything was written. Returns
  // whether bytes moved. Caller holds send_mu. (Ring writes cannot fail.)
  bool flush_locked() {
    if (queue.empty()) return false;
    uint64_t before = out.position();
    bool blocked = false;
    queue.flush(out, &blocked);
    if (out.position() == before) return false;
    peer_bell->ring();
    return true;
  }

  // Reads what has arrived and rings the peer if ring space was freed.
  // Returns whether bytes moved. Caller holds recv_mu.
  bool pump_locked(const std::function<void(const Status&)>& on_error) {
    if (broken) return false;
    uint64_t before = in.position();
    Status st = reader.pump(in);
    reader_paused.store(reader.paused(), std::memory_order_release);
    if (!st.is_ok()) {
      // The stream cannot be resynchronised: stop reading it and break the
      // communicator, so waiters fail instead of timing out.
      broken = true;
      Status why = remote_error("malformed shared-memory stream from rank " + std::to_string(peer) +
                                ": " + st.message());
      KF_LOG_ERROR(why.message());
      if (on_error) on_error(why);
    }
    if (in.position() == before) return false;
    peer_bell->ring();
    return true;
  }
};

ShmTransport::ShmTransport(const ShmOptions& opts, Mailbox* mailbox)
    : opts_(opts), mailbox_(mailbox) {}

ShmTransport::~ShmTransport() {
  // Without shared memory, TCP carries these peers' bytes again.
  if (!segment_of_local_.empty()) mailbox_->set_indirect_peers({});
}

std::string ShmTransport::segment_name(int rank) const {
  return "/kf-" + opts_.tag + "-" + std::to_string(rank);
}

// Segment layout: header, one ring per local sender, the staging buffers
// (two per area in use), the lane region.
size_t ShmTransport::staging_offset() const {
  return sizeof(SegmentHeader) + opts_.local_ranks.size() * (sizeof(RingHeader) + opts_.ring_bytes);
}

size_t ShmTransport::segment_bytes() const {
  return staging_offset() + 2 * static_cast<size_t>(areas()) * opts_.staging_bytes +
         opts_.lane_bytes;
}

char* ShmTransport::staging(int area, int local, int which) const {
  return segment_of_local_[static_cast<size_t>(local)] + staging_offset() +
         static_cast<size_t>(2 * area + which) * opts_.staging_bytes;
}

char* ShmTransport::lane_region(int local) const {
  if (opts_.lane_bytes == 0) return nullptr;
  return segment_of_local_[static_cast<size_t>(local)] + staging_offset() +
         2 * static_cast<size_t>(areas()) * opts_.staging_bytes;
}

void ShmTransport::ring(int local) const {
  reinterpret_cast<SegmentHeader*>(segment_of_local_[static_cast<size_t>(local)])->bell.ring();
}

void ShmTransport::publish_digest(int area, int which, uint32_t digest) {
  reinterpret_cast<SegmentHeader*>(own_.data())
      ->area[area]
      .digest[which]
      .store(digest, std::memory_order_relaxed);
}

uint32_t ShmTransport::digest_of(int area, int local, int which) const {
  auto* h = reinterpret_cast<SegmentHeader*>(segment_of_local_[static_cast<size_t>(local)]);
  return h->area[area].digest[which].load(std::memory_order_relaxed);
}

void ShmTransport::expose(int area, const void* addr) {
  reinterpret_cast<SegmentHeader*>(own_.data())
      ->area[area]
      .exposed.store(reinterpret_cast<uint64_t>(addr), std::memory_order_release);
}

const void* ShmTransport::exposed_by(int area, int local) const {
  auto* h = reinterpret_cast<SegmentHeader*>(segment_of_local_[static_cast<size_t>(local)]);
  return reinterpret_cast<const void*>(h->area[area].exposed.load(std::memory_order_acquire));
}

Status ShmTransport::read_peer(int local, const void* remote, void* dst, size_t len) const {
  auto* h = reinterpret_cast<SegmentHeader*>(segment_of_local_[static_cast<size_t>(local)]);
  char* out = static_cast<char*>(dst);
  const char* from = static_cast<const char*>(remote);
  while (len > 0) {
    iovec l{out, len}, r{const_cast<char*>(from), len};
    ssize_t n = process_vm_readv(static_cast<pid_t>(h->pid), &l, 1, &r, 1, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return system_error(errno_text("process_vm_readv", n < 0 ? errno : EIO));
    }
    out += n;
    from += n;
    len -= static_cast<size_t>(n);
  }
  return Status::ok();
}

bool ShmTransport::probe_single_copy() const {
  for (size_t i = 0; i < segment_of_local_.size(); ++i) {
    auto* h = reinterpret_cast<SegmentHeader*>(segment_of_local_[i]);
    if (segment_of_local_[i] == own_.data()) continue;
    // The peer exposed the address of its probe word (in its address space);
    // read it from there and compare with the value seen through our mapping.
    const void* remote =
        reinterpret_cast<const void*>(h->area[0].exposed.load(std::memory_order_acquire));
    if (remote == nullptr) return false;
    uint64_t value = 0;
    if (!read_peer(static_cast<int>(i), remote, &value, sizeof(value)).is_ok()) return false;
    if (value != h->probe) return false;
  }
  return true;
}

void ShmTransport::expose_probe() {
  auto* h = reinterpret_cast<SegmentHeader*>(own_.data());
  expose(0, &h->probe);
}

Status ShmTransport::staging_barrier(int area, const Deadline& deadline,
                                     const std::function<Status()>& health) {
  const uint64_t gen = ++barrier_generation_[area];
  auto* mine = reinterpret_cast<SegmentHeader*>(own_.data());
  mine->area[area].arrived.value.store(gen, std::memory_order_seq_cst);
  for (char* seg : segment_of_local_) {
    auto* h = reinterpret_cast<SegmentHeader*>(seg);
    if (h != mine) h->bell.ring();
  }
  auto all_arrived = [&] {
    for (char* seg : segment_of_local_) {
      if (reinterpret_cast<SegmentHeader*>(seg)->area[area].arrived.value.load(
              std::memory_order_acquire) < gen) {
        return false;
      }
    }
    return true;
  };
  const auto spin = opts_.oversubscribed ? kSpinOversubscribed : kSpin;
  auto spin_until = Clock::now() + spin;
  unsigned polls = 0;
  while (!all_arrived()) {
    if (Clock::now() < spin_until) {
      if (opts_.oversubscribed || (++polls & 255) == 0) {
        sched_yield();
      } else {
        cpu_relax();
      }
      continue;
    }
    KF_RETURN_IF_ERROR(health());
    if (deadline.expired()) {
      std::string missing;
      for (size_t i = 0; i < segment_of_local_.size(); ++i) {
        auto* h = reinterpret_cast<SegmentHeader*>(segment_of_local_[i]);
        if (h->area[area].arrived.value.load(std::memory_order_acquire) < gen) {
          missing += (missing.empty() ? "rank " : ", rank ") + std::to_string(opts_.local_ranks[i]);
        }
      }
      return timeout_error("timed out in a shared-memory barrier waiting for " + missing);
    }
    uint32_t token = bell_->prepare();
    if (!all_arrived()) bell_->sleep(token, deadline.remaining_ms(kSleepMs));
    bell_->done();
  }
  return Status::ok();
}

int ShmTransport::local_index(int rank) const {
  auto it = std::lower_bound(opts_.local_ranks.begin(), opts_.local_ranks.end(), rank);
  return static_cast<int>(it - opts_.local_ranks.begin());
}

RingHeader* ShmTransport::ring_header(char* segment, int slot) const {
  return reinterpret_cast<RingHeader*>(segment + sizeof(SegmentHeader) +
                                       static_cast<size_t>(slot) * (sizeof(RingHeader) + opts_.ring_bytes));
}

Status ShmTransport::create(const ShmOptions& opts, Mailbox* mailbox,
                            std::unique_ptr<ShmTransport>* out) {
  std::unique_ptr<ShmTransport> t(new ShmTransport(opts, mailbox));
  KF_RETURN_IF_ERROR(ShmSegment::create(t->segment_name(opts.rank), t->segment_bytes(), &t->own_));
  auto* h = new (t->own_.data()) SegmentHeader();
  h->magic = kSegmentMagic;
  h->ring_bytes = opts.ring_bytes;
  h->slots = opts.local_ranks.size();
  h->staging_bytes = opts.staging_bytes;
  h->lane_bytes = opts.lane_bytes;
  h->pid = static_cast<int64_t>(getpid());
  h->probe = kSegmentMagic ^ static_cast<uint64_t>(h->pid);
  for (size_t s = 0; s < opts.local_ranks.size(); ++s) {
    new (t->ring_header(t->own_.data(), static_cast<int>(s))) RingHeader();
  }
  t->bell_ = &h->bell;
  *out = std::move(t);
  return Status::ok();
}

Status ShmTransport::map_peers() {
  int size = 0;
  for (int r : opts_.local_ranks) size = std::max(size, r + 1);
  conns_.resize(static_cast<size_t>(size));
  segment_of_local_.assign(opts_.local_ranks.size(), nullptr);
  const int me = local_index(opts_.rank);
  segment_of_local_[static_cast<size_t>(me)] = own_.data();
  for (int r : opts_.local_ranks) {
    if (r == opts_.rank) continue;
    ShmSegment seg;
    KF_RETURN_IF_ERROR(ShmSegment::open(segment_name(r), segment_bytes(), &seg));
    auto* h = reinterpret_cast<SegmentHeader*>(seg.data());
    if (h->magic != kSegmentMagic || h->ring_bytes != opts_.ring_bytes ||
        h->slots != opts_.local_ranks.size() || h->staging_bytes != opts_.staging_bytes ||
        h->lane_bytes != opts_.lane_bytes) {
      return internal_error("shared-memory segment of rank " + std::to_string(r) + " has another layout");
    }
    const int slot_in_peer = me;
    const int slot_in_mine = local_index(r);
    RingWriter w(ring_header(seg.data(), slot_in_peer),
                 reinterpret_cast<char*>(ring_header(seg.data(), slot_in_peer) + 1), opts_.ring_bytes);
    RingReader rd(ring_header(own_.data(), slot_in_mine),
                  reinterpret_cast<char*>(ring_header(own_.data(), slot_in_mine) + 1), opts_.ring_bytes);
    conns_[static_cast<size_t>(r)] = std::make_unique<Conn>(r, opts_.epoch, mailbox_, w, rd, &h->bell);
    segment_of_local_[static_cast<size_t>(local_index(r))] = seg.data();
    peer_segments_.push_back(std::move(seg));
  }
  // Same-host peers' bytes come through the rings, not the TCP stream that
  // carries their goodbye: the mailbox must not fail their receives on it.
  mailbox_->set_indirect_peers(opts_.local_ranks);
  return Status::ok();
}

bool ShmTransport::reaches(int rank) const {
  return rank >= 0 && static_cast<size_t>(rank) < conns_.size() && conns_[static_cast<size_t>(rank)];
}

void ShmTransport::send(const TransferHandle& t, const FrameHeader& h) {
  Conn& c = *conns_[static_cast<size_t>(t->key().peer)];
  std::lock_guard<std::mutex> lock(c.send_mu);
  c.queue.push(SendItem::data_frame(h, t));
  c.flush_locked();
}

void ShmTransport::cancel_send(const TransferHandle& t, const Status& why) {
  Conn& c = *conns_[static_cast<size_t>(t->key().peer)];
  std::lock_guard<std::mutex> lock(c.send_mu);
  c.queue.cancel(t, why);
}

void ShmTransport::fail_all(const Status& why) {
  for (auto& c : conns_) {
    if (!c) continue;
    std::lock_guard<std::mutex> lock(c->send_mu);
    c->queue.fail_all(why);
  }
  bell_->ring();
}

bool ShmTransport::progress() {
  bool moved = false;
  for (auto& cp : conns_) {
    if (!cp) continue;
    Conn& c = *cp;
    {
      std::unique_lock<std::mutex> lock(c.send_mu, std::try_to_lock);
      if (lock.owns_lock() && !c.queue.empty()) moved |= c.flush_locked();
    }
    // The reader's state belongs to whoever holds recv_mu (concurrent
    // waiters all drive progress): look at it only under the lock.
    if (c.in.has_data() || c.reader_paused.load(std::memory_order_acquire)) {
      std::unique_lock<std::mutex> lock(c.recv_mu, std::try_to_lock);
      if (lock.owns_lock()) moved |= c.pump_locked(on_error_);
    }
  }
  return moved;
}

Status ShmTransport::wait(const TransferHandle& t, const Deadline& deadline) {
  const auto spin = opts_.oversubscribed ? kSpinOversubscribed : kSpin;
  auto spin_until = Clock::now() + spin;
  unsigned polls = 0;
  for (;;) {
    if (progress()) spin_until = Clock::now() + spin;
    if (t->done()) return t->status();
    if (Clock::now() < spin_until) {
      if (opts_.oversubscribed || (++polls & 63) == 0) {
        sched_yield();
      } else {
        cpu_relax();
      }
      continue;
    }
    uint32_t token = bell_->prepare();
    progress();
    if (t->done()) {
      bell_->done();
      return t->status();
    }
    if (deadline.expired()) {
      bell_->done();
      return timeout_error("timed out");
    }
    bell_->sleep(token, deadline.remaining_ms(kSleepMs));
    bell_->done();
    spin_until = Clock::now() + spin;
  }
}

}  // namespace kf
