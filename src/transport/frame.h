// The wire format of data connections: a fixed 48-byte little-endian header
// followed by `length` payload bytes. The parser is a pure function over
// bytes so that a fuzzer can drive it; every field is validated before use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace kf {

constexpr uint32_t kFrameMagic = 0x3146464bu;  // "KFF1" little-endian
// 2: OpSignature::digest mixes words, not bytes (session 19): a rank of
// another build is refused, not met with signature mismatches.
constexpr uint16_t kFrameVersion = 2;
constexpr size_t kFrameHeaderBytes = 48;
// Largest payload one frame may announce. Larger user messages are cut into
// chunks by the engine long before this.
constexpr uint64_t kMaxFramePayload = uint64_t(1) << 40;

enum class FrameType : uint16_t {
  kData = 1,   // payload of one (operation, chunk, step)
  kAbort = 2,  // the sender lost a peer; `step` holds the lost rank
  kBye = 3,    // the sender destroyed its communicator; no more frames follow
  kPing = 4,   // liveness: the sender's progress thread runs (sent on idle links)
};

// Steps from here up are reserved for the engine's control frames (operation
// signatures, partition-start announcements). The mailbox shows them to its
// control hook, and does not compare their signature field, which carries
// engine data.
constexpr uint32_t kControlStepFirst = 0xfffffff0u;

struct FrameHeader {
  FrameType type = FrameType::kData;
  uint32_t epoch = 0;      // membership version; frames of another epoch are dropped
  uint32_t signature = 0;  // digest of (kind, count, dtype, op, root) of the operation
  uint64_t name_hash = 0;  // FNV-1a of the operation's name
  uint64_t seq = 0;        // per-name sequence number
  uint32_t chunk = 0;
  uint32_t step = 0;
  uint64_t length = 0;     // payload bytes that follow the header
};

void encode_frame_header(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]);

// Parses and validates a header. Fails with KF_ERR_REMOTE and a description of
// what is wrong (bad magic, version, type, length) without reading past
// kFrameHeaderBytes.
Status decode_frame_header(const uint8_t in[kFrameHeaderBytes], FrameHeader* out);

// FNV-1a 64-bit hash of an operation name.
uint64_t hash_name(const char* name, size_t len);

}  // namespace kf
