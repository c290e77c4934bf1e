// Communicator split (MPI_Comm_split): a new communicator made of some ranks
// of this one. It is bootstrapped over this communicator instead of a
// rendezvous server: every rank opens its own listener, the ranks exchange
// (color, key, record) as named operations on this communicator's engine, and
// each group connects with its members' records. The new communicator owns
// its listener, TCP mesh, shared memory and engine, so it runs concurrently
// with this one and may outlive it.
#include <algorithm>
#include <cstring>

#include "algo/collectives.h"
#include "base/config.h"
#include "base/log.h"
#include "sched/communicator.h"
#include "topo/split_plan.h"
#include "transport/socket.h"

namespace kf {
namespace {

// Signature kind of the split's exchanges (the collectives use small values,
// the set-up agreement 0xfffe).
constexpr uint32_t kSplitKind = 0xfffd;

// The int32 fields each rank contributes to the first exchange.
enum HeaderField { kColor, kKey, kCode, kLength, kHeaderFields };

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// How long the new communicator may take to connect. At most half the
// parent's timeout: the ranks then meet again in an agreement on the parent,
// and a rank still connecting must arrive there before the fastest rank's
// wait for it times out.
int64_t set_up_ms(int64_t child_ms, int64_t parent_ms) {
  if (parent_ms < 0) return child_ms;
  return child_ms < 0 ? parent_ms / 2 : std::min(child_ms, parent_ms / 2);
}

}  // namespace

Status Communicator::split(int color, int key, const CommOptions& opts,
                           std::unique_ptr<Communicator>* out) {
  out->reset();
  if (color < 0) color = kNoColor;
  // A collective on this communicator: in call order with the other blocking calls.
  std::lock_guard<std::mutex> lock(blocking_mu_);
  auto exchange = [&](const char* name, const void* mine, void* all, size_t bytes) -> Status {
    if (size_ == 1) {
      std::memcpy(all, mine, bytes);
      return Status::ok();
    }
    OpSignature sig;
    sig.kind = kSplitKind;
    sig.count = bytes;
    return engine_.run(
        name, sig, [&](Peers& p) { return kf::all_gather(p, algo_, mine, all, bytes, KF_UINT8); });
  };

  // 1. This rank's listener and record. The new communicator's peers are
  // among this one's, so the address they already reach us on will do.
  Listener listener;
  std::string record;
  Status mine = Status::ok();
  if (color != kNoColor) {
    if (tcp_) {
      std::string ip;
      uint16_t port = 0;
      mine = split_host_port(tcp_->address(), &ip, &port);
      // The knob is read again (it may have changed since this communicator
      // connected): a refused choice fails the split on every rank at once.
      if (mine.is_ok()) mine = check_congestion(knob_string(Knob::KF_TCP_CONGESTION));
      if (mine.is_ok()) mine = open_listener(ip, &listener);
    }
    if (mine.is_ok()) record = make_record(listener.address);
  }

  // 2. Every rank learns every rank's request and record.
  int32_t header[kHeaderFields] = {color, key, mine.is_ok() ? 0 : static_cast<int32_t>(mine.code()),
                                   static_cast<int32_t>(record.size())};
  std::vector<int32_t> headers(static_cast<size_t>(size_) * kHeaderFields);
  KF_RETURN_IF_ERROR(exchange("kf.split.requests", header, headers.data(), sizeof(header)));
  // From here every rank decides on the same data, so all decide alike.
  std::vector<SplitRequest> requests(static_cast<size_t>(size_));
  std::vector<int> failed;
  size_t longest = 0;
  for (int r = 0; r < size_; ++r) {
    const int32_t* h = &headers[static_cast<size_t>(r) * kHeaderFields];
    requests[static_cast<size_t>(r)].color = h[kColor];
    requests[static_cast<size_t>(r)].key = h[kKey];
    if (h[kCode] != 0 || h[kLength] < 0) failed.push_back(r);
    longest = std::max(longest, static_cast<size_t>(std::max(h[kLength], 0)));
  }
  if (!failed.empty()) {
    if (!mine.is_ok())
      return Status(mine.code(), "split of '" + opts_.name + "': " + mine.message());
    return remote_error("split of '" + opts_.name + "': rank(s) " + rank_list(failed) +
                        " could not open a listening socket");
  }
  std::vector<char> padded(longest, 0), all(longest * static_cast<size_t>(size_));
  if (!record.empty()) std::memcpy(padded.data(), record.data(), record.size());
  if (longest > 0)
    KF_RETURN_IF_ERROR(exchange("kf.split.records", padded.data(), all.data(), longest));

  // 3. This rank's group connects.
  std::unique_ptr<Communicator> child;
  Status built = Status::ok();
  if (color != kNoColor) {
    std::vector<int> members = split_members(requests, color);
    std::vector<std::string> records;
    int my_index = -1;
    for (size_t i = 0; i < members.size(); ++i) {
      size_t m = static_cast<size_t>(members[i]);
      if (members[i] == rank_) my_index = static_cast<int>(i);
      records.emplace_back(&all[m * longest],
                           static_cast<size_t>(headers[m * kHeaderFields + kLength]));
    }
    child.reset(new Communicator(my_index, static_cast<int>(members.size()), opts));
    child->secret_ = secret_;
    child->local_topo_ = local_topo_;
    // The parent's strategy, the same on every rank (set_strategy is collective).
    child->strategy_.store(strategy_.load());
    Deadline deadline = Deadline::after_ms(set_up_ms(opts.timeout_ms, opts_.timeout_ms));
    built =
        child->connect_with_records(records, std::move(listener), deadline, /*bind_cpus=*/false);
    if (!built.is_ok()) child.reset();
  }

  // 4. Every rank of this communicator agrees: all new communicators exist,
  // or none is returned and every rank reports the failure.
  int32_t code = built.is_ok() ? 0 : static_cast<int32_t>(built.code());
  std::vector<int32_t> codes(static_cast<size_t>(size_));
  KF_RETURN_IF_ERROR(exchange("kf.split.agree", &code, codes.data(), sizeof(code)));
  failed.clear();
  for (int r = 0; r < size_; ++r) {
    if (codes[static_cast<size_t>(r)] != 0) failed.push_back(r);
  }
  if (!failed.empty()) {
    child.reset();
    if (!built.is_ok()) {
      return Status(built.code(), "split of '" + opts_.name + "': setting up '" + opts.name +
                                      "': " + built.message());
    }
    return remote_error("split of '" + opts_.name + "': rank(s) " + rank_list(failed) +
                        " failed to set up their new communicator, so no rank keeps one");
  }
  if (child) {
    KF_LOG_DEBUG("split of '" + opts_.name + "': rank " + std::to_string(rank_) + " is rank " +
                 std::to_string(child->rank()) + " of " + std::to_string(child->size()) + " in '" +
                 opts.name + "'");
  }
  *out = std::move(child);
  return Status::ok();
}

}  // namespace kf
