// Serial source: ITCH lines (protocol/SERIAL_LINE.md) read from a serial
// port — here a pty made by socat — through boost::asio::serial_port.
// Each good line is sequence-checked and handed on with the sender's
// timestamp as its origin, so the gateway measures one-way latency.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "pipeline/sequence_tracker.hpp"
#include "protocol/serial_line.hpp"
#include "util/stage_clock.hpp"

namespace itchbench {

struct SerialSourceOptions {
  std::string device;
  unsigned baud = 115200;
  uint64_t idle_exit_ms = 0;  // stop after this long without a byte (once one came)
};

struct SerialSourceStats {
  std::string stop_reason;
};

class SerialSource {
 public:
  explicit SerialSource(const SerialSourceOptions& options);  // opens, configures 8N1; throws
  ~SerialSource();

  // on_message(seq, bytes, len, arrival) for every in-sequence message, until
  // the end-of-session line, a stop request, the idle timeout or the port
  // closing. arrival.t_read: when the read returned; t_origin: the sender's
  // stamp in the line (when its first byte was due); no kernel stamp.
  using OnMessage = std::function<void(uint64_t, const uint8_t*, size_t, const logfmt::Arrival&)>;
  void run(const StageClock& clock, const OnMessage& on_message);

  const serial::LineCounters& lines() const { return reader_.counters(); }
  const SequenceTracker& sequence() const { return sequence_; }
  const SerialSourceStats& stats() const { return stats_; }

 private:
  struct Impl;
  Impl* impl_;
  SerialSourceOptions options_;
  serial::LineReader reader_;
  SequenceTracker sequence_;
  SerialSourceStats stats_;
};

}  // namespace itchbench
