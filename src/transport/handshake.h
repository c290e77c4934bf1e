// Mutual authentication of a new connection with the job secret, without
// sending the secret: each side sends a fresh nonce, then proves it knows the
// secret with a SipHash-2-4 MAC over the other side's nonce and its own
// identity. A connection that fails this is closed before any data is read.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/status.h"

namespace kf {

using JobSecret = std::array<uint8_t, 16>;

// What a connection is for; part of the MAC so a proof for one purpose cannot
// be replayed for another.
enum class ConnKind : uint16_t { kRendezvous = 1, kData = 2 };

struct HandshakeResult {
  uint32_t peer_rank = 0;
  uint32_t peer_epoch = 0;
};

// Which end of the connection we are. The dialer proves itself first and
// the acceptor answers only after checking that proof, and the role is part
// of every MAC: so nobody can make a rank sign a nonce of their choosing and
// reflect that proof to another rank.
enum class Role : uint8_t { kDialer = 1, kAcceptor = 2 };

// Runs the handshake on a connected socket. `expected_peer` is the identity
// the caller dialled (checked against the peer's hello), or -1 for any.
Status handshake(int fd, const JobSecret& secret, ConnKind kind, Role role, uint32_t my_rank,
                 uint32_t epoch, int64_t expected_peer, const Deadline& deadline,
                 HandshakeResult* out);

// SipHash-2-4 of `data` keyed by the 16-byte secret.
uint64_t siphash24(const JobSecret& key, const uint8_t* data, size_t len);

// Fills `out` with bytes from the kernel's random source.
Status random_bytes(void* out, size_t len);

std::string secret_to_hex(const JobSecret& s);
Status secret_from_hex(const std::string& hex, JobSecret* out);

}  // namespace kf
