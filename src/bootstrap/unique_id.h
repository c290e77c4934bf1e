// The unique id's contents: the rendezvous point (address and job secret),
// as text inside the fixed-size public kf_unique_id_t.
#pragma once

#include "base/status.h"
#include "bootstrap/rendezvous.h"
#include "kungfu/types.h"

namespace kf {

// Opens a rendezvous server on this host and describes it in `id`.
Status create_unique_id(int64_t timeout_ms, kf_unique_id_t* id);

Status encode_unique_id(const RendezvousPoint& point, kf_unique_id_t* id);
Status decode_unique_id(const kf_unique_id_t& id, RendezvousPoint* point);

}  // namespace kf
