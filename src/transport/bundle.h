// Bundles: several data frames bound for one peer, packed into the payload of
// one frame so that they cost one transfer (operation fusion, see
// sched/fusion.h). The payload is the inner frames back to back, each a
// 48-byte frame header followed by its payload, in the order they were
// appended; the receiver delivers them in that order, as if each had
// arrived on its own. Like the frame parser, the decoder is a pure function
// over bytes, and validates everything before the first frame is delivered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "transport/frame.h"

namespace kf {

// The step that marks a bundle frame (in the engine's reserved range; its
// name hash and sequence only tell one sender's bundles apart).
constexpr uint32_t kBundleStep = 0xfffffff2u;

// Appends one inner frame: `h` (a data frame, h.length == number of bytes
// at `payload`) and its payload.
void bundle_append(std::vector<char>* bundle, const FrameHeader& h, const void* payload);

// Calls `deliver` for every inner frame of `bundle` (`len` bytes), in order.
// Fails with KF_ERR_REMOTE, delivering nothing, if the bundle is malformed:
// a truncated or invalid header, a payload running past the end, an inner
// frame that is not a data frame, is itself a bundle, or carries an epoch
// other than `epoch`. The payload pointer is valid during the call only.
Status bundle_for_each(const char* bundle, size_t len, uint32_t epoch,
                       const std::function<void(const FrameHeader&, const char*)>& deliver);

}  // namespace kf
