#include "transport/handshake.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "transport/socket.h"

namespace kf {
namespace {

constexpr uint32_t kHelloMagic = 0x3148464bu;  // "KFH1"
constexpr uint16_t kHelloVersion = 2;          // with kFrameVersion 2
constexpr size_t kNonceBytes = 16;
constexpr size_t kHelloBytes = 4 + 2 + 2 + 4 + 4 + kNonceBytes;

uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

uint64_t load64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

struct Hello {
  uint16_t kind;
  uint32_t rank;
  uint32_t epoch;
  uint8_t nonce[kNonceBytes];
};

void encode_hello(const Hello& h, uint8_t* out) {
  put32(out, kHelloMagic);
  out[4] = kHelloVersion & 0xff;
  out[5] = kHelloVersion >> 8;
  out[6] = h.kind & 0xff;
  out[7] = static_cast<uint8_t>(h.kind >> 8);
  put32(out + 8, h.rank);
  put32(out + 12, h.epoch);
  std::memcpy(out + 16, h.nonce, kNonceBytes);
}

Status decode_hello(const uint8_t* in, Hello* h) {
  if (get32(in) != kHelloMagic) return remote_error("not a libkungfu peer (bad hello magic)");
  uint16_t version = static_cast<uint16_t>(in[4] | in[5] << 8);
  if (version != kHelloVersion) return remote_error("unsupported hello version");
  h->kind = static_cast<uint16_t>(in[6] | in[7] << 8);
  h->rank = get32(in + 8);
  h->epoch = get32(in + 12);
  std::memcpy(h->nonce, in + 16, kNonceBytes);
  return Status::ok();
}

// MAC over (their nonce, my nonce, my kind, my rank, my epoch, my role).
uint64_t proof(const JobSecret& secret, const Hello& mine, const Hello& theirs, Role role) {
  uint8_t buf[2 * kNonceBytes + 2 + 4 + 4 + 1];
  std::memcpy(buf, theirs.nonce, kNonceBytes);
  std::memcpy(buf + kNonceBytes, mine.nonce, kNonceBytes);
  buf[32] = mine.kind & 0xff;
  buf[33] = static_cast<uint8_t>(mine.kind >> 8);
  put32(buf + 34, mine.rank);
  put32(buf + 38, mine.epoch);
  buf[42] = static_cast<uint8_t>(role);
  return siphash24(secret, buf, sizeof(buf));
}

Status send_proof(int fd, uint64_t mac, const Deadline& deadline) {
  uint8_t pbuf[8];
  for (int i = 0; i < 8; ++i) pbuf[i] = static_cast<uint8_t>(mac >> (8 * i));
  return write_full(fd, pbuf, sizeof(pbuf), deadline);
}

Status check_proof(int fd, uint64_t expected, const Deadline& deadline) {
  uint8_t pbuf[8];
  KF_RETURN_IF_ERROR(read_full(fd, pbuf, sizeof(pbuf), deadline));
  uint64_t got = 0;
  for (int i = 7; i >= 0; --i) got = (got << 8) | pbuf[i];
  // Not secret-dependent timing worth hiding: a wrong proof only learns "no".
  if (got != expected) return remote_error("peer does not know the job secret");
  return Status::ok();
}

}  // namespace

uint64_t siphash24(const JobSecret& key, const uint8_t* data, size_t len) {
  uint64_t k0 = load64(key.data()), k1 = load64(key.data() + 8);
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  auto round = [&] {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  };
  size_t full = len - len % 8;
  for (size_t i = 0; i < full; i += 8) {
    uint64_t m = load64(data + i);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t b = uint64_t(len) << 56;
  for (size_t i = 0; i < len % 8; ++i) b |= uint64_t(data[full + i]) << (8 * i);
  v3 ^= b;
  round();
  round();
  v0 ^= b;
  v2 ^= 0xff;
  round();
  round();
  round();
  round();
  return v0 ^ v1 ^ v2 ^ v3;
}

Status random_bytes(void* out, size_t len) {
  uint8_t* p = static_cast<uint8_t*>(out);
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return system_error(errno_text("getrandom", errno));
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return Status::ok();
}

std::string secret_to_hex(const JobSecret& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : s) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

Status secret_from_hex(const std::string& hex, JobSecret* out) {
  if (hex.size() != 2 * out->size()) {
    return invalid_argument("job secret must be " + std::to_string(2 * out->size()) + " hex digits");
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < out->size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return invalid_argument("job secret is not hexadecimal");
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return Status::ok();
}

Status handshake(int fd, const JobSecret& secret, ConnKind kind, Role role, uint32_t my_rank,
                 uint32_t epoch, int64_t expected_peer, const Deadline& deadline,
                 HandshakeResult* out) {
  Hello mine{static_cast<uint16_t>(kind), my_rank, epoch, {}};
  KF_RETURN_IF_ERROR(random_bytes(mine.nonce, kNonceBytes));
  uint8_t buf[kHelloBytes];
  encode_hello(mine, buf);
  KF_RETURN_IF_ERROR(write_full(fd, buf, sizeof(buf), deadline));
  KF_RETURN_IF_ERROR(read_full(fd, buf, sizeof(buf), deadline));
  Hello theirs;
  KF_RETURN_IF_ERROR(decode_hello(buf, &theirs));
  if (theirs.kind != mine.kind) return remote_error("peer opened a connection of another kind");
  if (expected_peer >= 0 && theirs.rank != static_cast<uint32_t>(expected_peer)) {
    return remote_error("dialled " + std::to_string(expected_peer) + " but " +
                        std::to_string(theirs.rank) + " answered");
  }
  const Role their_role = role == Role::kDialer ? Role::kAcceptor : Role::kDialer;
  if (role == Role::kDialer) {
    KF_RETURN_IF_ERROR(send_proof(fd, proof(secret, mine, theirs, role), deadline));
    KF_RETURN_IF_ERROR(check_proof(fd, proof(secret, theirs, mine, their_role), deadline));
  } else {
    KF_RETURN_IF_ERROR(check_proof(fd, proof(secret, theirs, mine, their_role), deadline));
    KF_RETURN_IF_ERROR(send_proof(fd, proof(secret, mine, theirs, role), deadline));
  }
  out->peer_rank = theirs.rank;
  out->peer_epoch = theirs.epoch;
  return Status::ok();
}

}  // namespace kf
