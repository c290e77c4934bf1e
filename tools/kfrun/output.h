// Forwarding of rank output: bytes read from a rank's pipe are cut into lines
// and each whole line is written, with its "[rank] " prefix, in one piece, so
// lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <string>

namespace kfrun {

// One of kfrun's own output descriptors (1 or 2). After a write error (e.g.
// EPIPE: the reader went away) it discards everything, so the ranks keep
// running as they would with a full disk rather than hanging kfrun.
class Sink {
 public:
  explicit Sink(int fd) : fd_(fd) {}
  void write_all(const std::string& data);

 private:
  int fd_;
  bool broken_ = false;
};

// The line buffer of one stream (stdout or stderr) of one rank.
class LineForwarder {
 public:
  // `prefix` is "[rank] ", or "" to pass output through unchanged.
  LineForwarder(Sink* sink, std::string prefix) : sink_(sink), prefix_(std::move(prefix)) {}

  // Takes bytes read from the rank and writes every complete line.
  void feed(const char* data, size_t n);
  // At end of stream: writes a partial last line. With a prefix a newline is
  // added, so the next line of another rank starts on its own line.
  void finish();

 private:
  void emit_partial();

  // A rank writing a very long line without a newline must not make kfrun
  // hold unbounded memory: beyond this the partial line is written as is.
  static constexpr size_t kMaxPending = 1 << 20;

  Sink* sink_;
  std::string prefix_;
  std::string pending_;  // bytes after the last newline
};

}  // namespace kfrun
