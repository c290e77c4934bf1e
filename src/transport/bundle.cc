#include "transport/bundle.h"

#include <cstring>
#include <string>

namespace kf {
namespace {

// Checks every inner frame; on success *count is their number.
Status validate(const char* bundle, size_t len, uint32_t epoch, size_t* count) {
  size_t at = 0, n = 0;
  while (at < len) {
    // Built only for an error: this runs for every frame received.
    auto bad = [&](const std::string& what) {
      return remote_error("bundle frame " + std::to_string(n) + " at byte " + std::to_string(at) +
                          ": " + what);
    };
    if (len - at < kFrameHeaderBytes) return bad("truncated header");
    FrameHeader h;
    Status st = decode_frame_header(reinterpret_cast<const uint8_t*>(bundle + at), &h);
    if (!st.is_ok()) return bad(st.message());
    if (h.type != FrameType::kData) return bad("not a data frame");
    if (h.step == kBundleStep) return bad("a bundle inside a bundle");
    if (h.epoch != epoch) {
      return bad("epoch " + std::to_string(h.epoch) + " inside a bundle of epoch " +
                 std::to_string(epoch));
    }
    if (h.length > len - at - kFrameHeaderBytes) {
      return bad("payload of " + std::to_string(h.length) +
                 " bytes runs past the end of the bundle");
    }
    at += kFrameHeaderBytes + static_cast<size_t>(h.length);
    ++n;
  }
  *count = n;
  return Status::ok();
}

}  // namespace

void bundle_append(std::vector<char>* bundle, const FrameHeader& h, const void* payload) {
  const size_t at = bundle->size();
  bundle->resize(at + kFrameHeaderBytes + static_cast<size_t>(h.length));
  encode_frame_header(h, reinterpret_cast<uint8_t*>(bundle->data() + at));
  if (h.length > 0) std::memcpy(bundle->data() + at + kFrameHeaderBytes, payload, h.length);
}

Status bundle_for_each(const char* bundle, size_t len, uint32_t epoch,
                       const std::function<void(const FrameHeader&, const char*)>& deliver) {
  size_t count = 0;
  KF_RETURN_IF_ERROR(validate(bundle, len, epoch, &count));
  size_t at = 0;
  for (size_t i = 0; i < count; ++i) {
    FrameHeader h;
    (void)decode_frame_header(reinterpret_cast<const uint8_t*>(bundle + at), &h);  // validated
    at += kFrameHeaderBytes;
    deliver(h, bundle + at);
    at += static_cast<size_t>(h.length);
  }
  return Status::ok();
}

}  // namespace kf
