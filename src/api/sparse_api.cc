// C entry points of include/kungfu/sparse.h: argument checks and the options
// struct; the work is in src/sparse.
#include <cstddef>
#include <string>

#include "api/guard.h"
#include "kungfu/kungfu.h"
#include "sparse/topk.h"

namespace kf {
namespace api {
namespace {

// Reads the caller's options: only the fields its size covers.
Status read_topk_options(const kf_topk_options_t* o, TopkOptions* out) {
  if (o == nullptr) return Status::ok();
  if (o->size < offsetof(kf_topk_options_t, rounds) || o->magic != KF_TOPK_OPTIONS_MAGIC) {
    return invalid_argument("kf_topk: options were not initialised with KF_TOPK_OPTIONS_INITIALIZER");
  }
  auto covers = [o](size_t offset, size_t field) { return o->size >= offset + field; };
  if (covers(offsetof(kf_topk_options_t, rounds), sizeof(o->rounds))) {
    if (o->rounds < 0 || o->rounds > 1000) {
      return invalid_argument("kf_topk: options.rounds = " + std::to_string(o->rounds) +
                              " is not in [0, 1000]");
    }
    out->rounds = o->rounds;
  }
  if (covers(offsetof(kf_topk_options_t, seed), sizeof(o->seed))) out->seed = o->seed;
  if (covers(offsetof(kf_topk_options_t, threads), sizeof(o->threads))) {
    if (o->threads < 0 || o->threads > 1024) {
      return invalid_argument("kf_topk: options.threads = " + std::to_string(o->threads) +
                              " is not in [0, 1024] (0 = automatic)");
    }
    out->threads = o->threads;
  }
  return Status::ok();
}

}  // namespace
}  // namespace api
}  // namespace kf

KF_API kf_status_t kf_topk(const float* x, uint64_t d, uint64_t k, kf_topk_algo_t algo,
                           const kf_topk_options_t* options, float* values, uint32_t* indices) {
  return kf::api::guarded(nullptr, [&]() -> kf::Status {
    if (d >= (uint64_t{1} << 32)) {
      return kf::invalid_argument("kf_topk: d = " + std::to_string(d) +
                                  " does not fit uint32 indices (d must be below 2^32)");
    }
    const size_t n = static_cast<size_t>(d);
    const size_t kk = k < d ? static_cast<size_t>(k) : n;
    switch (algo) {
      case KF_TOPK_MSTOPK: {
        kf::TopkOptions opts;
        KF_RETURN_IF_ERROR(kf::api::read_topk_options(options, &opts));
        return kf::mstopk(x, n, kk, opts, values, indices);
      }
      case KF_TOPK_EXACT:
        return kf::exact_topk(x, n, kk, values, indices);
    }
    return kf::invalid_argument("kf_topk: algo " + std::to_string(static_cast<int>(algo)) +
                                " is not KF_TOPK_MSTOPK or KF_TOPK_EXACT");
  });
}
