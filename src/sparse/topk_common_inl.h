// for_blocks, a template: included by topk_common.h.
#pragma once

#include <system_error>
#include <thread>
#include <utility>

namespace kf {
namespace topk {

inline size_t part_count(size_t blocks, int threads) {
  if (threads <= 1 || blocks < 2) return 1;
  return static_cast<size_t>(threads) < blocks ? static_cast<size_t>(threads) : blocks;
}

template <typename Fn>
void for_block_ranges(size_t blocks, int threads, Fn&& fn) {
  const size_t parts = part_count(blocks, threads);
  if (parts == 1) {
    fn(size_t{0}, size_t{0}, blocks);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(parts - 1);
  std::vector<size_t> inline_parts;
  for (size_t p = 1; p < parts; ++p) {
    const size_t begin = blocks * p / parts, end = blocks * (p + 1) / parts;
    try {
      workers.emplace_back([&fn, p, begin, end] { fn(p, begin, end); });
    } catch (const std::system_error&) {
      inline_parts.push_back(p);
    }
  }
  fn(size_t{0}, size_t{0}, blocks / parts);
  for (size_t p : inline_parts) fn(p, blocks * p / parts, blocks * (p + 1) / parts);
  for (auto& w : workers) w.join();
}

template <typename Fn>
void for_blocks(size_t blocks, int threads, Fn&& fn) {
  for_block_ranges(blocks, threads, [&fn](size_t, size_t begin, size_t end) {
    for (size_t b = begin; b < end; ++b) fn(b);
  });
}

}  // namespace topk
}  // namespace kf
