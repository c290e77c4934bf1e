#include "sched/async_signature.h"

#include <algorithm>
#include <cstring>

#include "algo/strategy.h"
#include "base/dtype.h"
#include "sched/op_kind.h"

namespace kf {
namespace {

void put(char* out, size_t at, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get(const char* in, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

const char* op_name(int32_t op) {
  static const char* const names[] = {"sum", "prod", "min", "max", "avg"};
  return op >= 0 && op < 5 ? names[op] : "none";
}

std::string dtype_text(int32_t dt) {
  return dt >= 0 && dt < KF_DTYPE_COUNT ? dtype_name(static_cast<kf_dtype_t>(dt)) : "none";
}

}  // namespace

void encode_sig(const SigRecord& s, char out[kSigRecordBytes]) {
  std::memset(out, 0, kSigRecordBytes);
  put(out, 0, s.kind, 4);
  put(out, 4, static_cast<uint32_t>(s.dtype), 4);
  put(out, 8, s.count, 8);
  put(out, 16, static_cast<uint32_t>(s.op), 4);
  put(out, 20, static_cast<uint32_t>(s.root), 4);
  put(out, 24, s.partition_elems, 8);
  size_t n = std::min<size_t>(s.name.size(), 255);
  put(out, 32, n, 4);
  put(out, 36, static_cast<uint32_t>(s.strategy), 4);
  put(out, 40, s.fused ? 1u : 0u, 4);
  std::memcpy(out + 48, s.name.data(), n);
}

SigRecord decode_sig(const char in[kSigRecordBytes]) {
  SigRecord s;
  s.kind = static_cast<uint32_t>(get(in, 0, 4));
  s.dtype = static_cast<int32_t>(get(in, 4, 4));
  s.count = get(in, 8, 8);
  s.op = static_cast<int32_t>(get(in, 16, 4));
  s.root = static_cast<int32_t>(get(in, 20, 4));
  s.partition_elems = get(in, 24, 8);
  size_t n = std::min<size_t>(get(in, 32, 4), 255);
  s.strategy = static_cast<int32_t>(get(in, 36, 4));
  s.fused = get(in, 40, 4) != 0;
  s.name.assign(in + 48, n);
  return s;
}

std::string sig_difference(const SigRecord& a, int ra, const SigRecord& b, int rb) {
  auto diff = [&](const char* what, const std::string& x, const std::string& y) {
    return std::string(what) + " " + x + " on rank " + std::to_string(ra) + " vs " + y +
           " on rank " + std::to_string(rb);
  };
  if (a.kind != b.kind) return diff("kind", op_kind_name(a.kind), op_kind_name(b.kind));
  if (a.count != b.count) return diff("count", std::to_string(a.count), std::to_string(b.count));
  if (a.dtype != b.dtype) return diff("dtype", dtype_text(a.dtype), dtype_text(b.dtype));
  if (a.op != b.op) return diff("op", op_name(a.op), op_name(b.op));
  if (a.root != b.root) {
    // The sparse all_reduce has no root: the field carries k, the algorithm
    // and whether a residual is kept (sparse_ops.cc).
    if (a.kind == kSparseAllReduce) {
      return "k, algorithm or residual presence differ between rank " + std::to_string(ra) +
             " and rank " + std::to_string(rb);
    }
    return diff("root", std::to_string(a.root), std::to_string(b.root));
  }
  if (a.partition_elems != b.partition_elems) {
    return diff("partition size (elements)", std::to_string(a.partition_elems),
                std::to_string(b.partition_elems));
  }
  if (a.strategy != b.strategy) {
    auto text = [](int32_t s) {
      return s >= 0 && s < kStrategyCount ? std::string(strategy_name(static_cast<Strategy>(s)))
                                          : std::string("flat (none)");
    };
    return diff("strategy", text(a.strategy), text(b.strategy));
  }
  if (a.fused != b.fused) {
    const int fused = a.fused ? ra : rb, unfused = a.fused ? rb : ra;
    return "fusion: the operation is fused on rank " + std::to_string(fused) + " but not on rank " +
           std::to_string(unfused) + " (KF_FUSION_THRESHOLD_BYTES must be equal on every rank)";
  }
  return "";
}

}  // namespace kf
