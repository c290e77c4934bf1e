#include "transport/frame.h"

#include <string>

namespace kf {
namespace {

void put16(uint8_t* p, uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Byte offsets of the header fields.
enum : size_t {
  kOffMagic = 0, kOffVersion = 4, kOffType = 6, kOffEpoch = 8, kOffSignature = 12,
  kOffName = 16, kOffSeq = 24, kOffChunk = 32, kOffStep = 36, kOffLength = 40,
};
static_assert(kOffLength + 8 == kFrameHeaderBytes, "header layout");

}  // namespace

void encode_frame_header(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]) {
  put32(out + kOffMagic, kFrameMagic);
  put16(out + kOffVersion, kFrameVersion);
  put16(out + kOffType, static_cast<uint16_t>(h.type));
  put32(out + kOffEpoch, h.epoch);
  put32(out + kOffSignature, h.signature);
  put64(out + kOffName, h.name_hash);
  put64(out + kOffSeq, h.seq);
  put32(out + kOffChunk, h.chunk);
  put32(out + kOffStep, h.step);
  put64(out + kOffLength, h.length);
}

Status decode_frame_header(const uint8_t in[kFrameHeaderBytes], FrameHeader* out) {
  uint32_t magic = get32(in + kOffMagic);
  if (magic != kFrameMagic) return remote_error("bad frame magic " + std::to_string(magic));
  uint16_t version = get16(in + kOffVersion);
  if (version != kFrameVersion) {
    return remote_error("unsupported frame version " + std::to_string(version));
  }
  uint16_t type = get16(in + kOffType);
  if (type < static_cast<uint16_t>(FrameType::kData) || type > static_cast<uint16_t>(FrameType::kPing)) {
    return remote_error("unknown frame type " + std::to_string(type));
  }
  FrameHeader h;
  h.type = static_cast<FrameType>(type);
  h.epoch = get32(in + kOffEpoch);
  h.signature = get32(in + kOffSignature);
  h.name_hash = get64(in + kOffName);
  h.seq = get64(in + kOffSeq);
  h.chunk = get32(in + kOffChunk);
  h.step = get32(in + kOffStep);
  h.length = get64(in + kOffLength);
  if (h.length > kMaxFramePayload) {
    return remote_error("frame length " + std::to_string(h.length) + " exceeds the limit");
  }
  if (h.type != FrameType::kData && h.length != 0) {
    return remote_error("control frame with a payload");
  }
  *out = h;
  return Status::ok();
}

uint64_t hash_name(const char* name, size_t len) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; ++i) {
    h ^= static_cast<uint8_t>(name[i]);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace kf
