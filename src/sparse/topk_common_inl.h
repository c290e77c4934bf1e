// for_blocks, a template: included by topk_common.h.
#pragma once

#include <system_error>
#include <thread>
#include <utility>

namespace kf {
namespace topk {

template <typename Fn>
void for_blocks(size_t blocks, int threads, Fn&& fn) {
  auto run = [&fn](size_t begin, size_t end) {
    for (size_t b = begin; b < end; ++b) fn(b);
  };
  if (threads <= 1 || blocks < 2) {
    run(0, blocks);
    return;
  }
  const size_t t = static_cast<size_t>(threads) < blocks ? static_cast<size_t>(threads) : blocks;
  std::vector<std::thread> workers;
  workers.reserve(t - 1);
  std::vector<std::pair<size_t, size_t>> inline_ranges;
  for (size_t i = 1; i < t; ++i) {
    const size_t begin = blocks * i / t, end = blocks * (i + 1) / t;
    try {
      workers.emplace_back(run, begin, end);
    } catch (const std::system_error&) {
      inline_ranges.emplace_back(begin, end);
    }
  }
  run(0, blocks / t);
  for (const auto& r : inline_ranges) run(r.first, r.second);
  for (auto& w : workers) w.join();
}

}  // namespace topk
}  // namespace kf
