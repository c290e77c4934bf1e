// WakeTimer (src/base/wake_timer.h): a sleep that other threads end now or
// at a time they set, and cancel, without waking the sleeper. Times here are
// generous (a loaded machine delays a wake-up, never advances it).
#include "base/wake_timer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kf {
namespace {

using std::chrono::milliseconds;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

TEST(WakeTimer, RingBeforeSleepEndsItAtOnce) {
  WakeTimer t;
  t.ring();
  const auto t0 = Clock::now();
  t.sleep();
  EXPECT_LT(ms_since(t0), 1000.0);
}

TEST(WakeTimer, RingFromAnotherThreadEndsTheSleep) {
  WakeTimer t;
  const auto t0 = Clock::now();
  std::thread ringer([&] {
    std::this_thread::sleep_for(milliseconds(20));
    t.ring();
  });
  t.sleep();
  EXPECT_GE(ms_since(t0), 20.0);
  ringer.join();
}

TEST(WakeTimer, TimeSetEndsTheSleepNoEarlier) {
  WakeTimer t;
  const auto t0 = Clock::now();
  t.set(t0 + milliseconds(30));
  t.sleep();
  EXPECT_GE(ms_since(t0), 30.0);
}

TEST(WakeTimer, TimePassedEndsTheSleepAtOnce) {
  WakeTimer t;
  t.set(Clock::now() - milliseconds(5));
  const auto t0 = Clock::now();
  t.sleep();
  EXPECT_LT(ms_since(t0), 1000.0);
}

// A sleeper's time replaced by a later one, then cleared, by another
// thread: neither the first time nor the cleared one ends the sleep; the
// ring does. (Margins of 200 ms and more: a loaded machine delays threads.)
TEST(WakeTimer, TimeChangedWhileAsleep) {
  WakeTimer t;
  std::atomic<bool> woke{false};
  const auto t0 = Clock::now();
  t.set(t0 + milliseconds(300));
  std::thread sleeper([&] {
    t.sleep();
    woke = true;
  });
  std::this_thread::sleep_for(milliseconds(50));   // (usually asleep by now)
  t.set(t0 + milliseconds(900));                   // later: replaces the first time
  std::this_thread::sleep_for(milliseconds(450));  // past the first time
  EXPECT_FALSE(woke.load());
  t.clear();
  std::this_thread::sleep_for(milliseconds(700));  // past the second time too
  EXPECT_FALSE(woke.load());
  t.ring();
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

// A time that came before a sleep (nobody slept through it) ends that sleep
// at once; once consumed, the next sleep waits for a new ring.
TEST(WakeTimer, ExpiryIsRememberedOnce) {
  WakeTimer t;
  t.set(Clock::now() + milliseconds(1));
  std::this_thread::sleep_for(milliseconds(10));
  t.sleep();  // returns: the time passed meanwhile
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    t.sleep();
    woke = true;
  });
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_FALSE(woke.load());
  t.ring();
  sleeper.join();
}

}  // namespace
}  // namespace kf
