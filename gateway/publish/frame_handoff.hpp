// The hand-off the brokered publishers (MQTT, Kafka) share: the hot path
// pushes each frame (a BBO record, or a depth record) into a lock-free SPSC
// ring (no lock, no allocation; a full ring drops the frame and counts it);
// a thread of its own, named and
// kept off the hot thread's CPU, hands what it finds to send() every poll
// interval while frames come, calls after_drain() (a client's own
// housekeeping), sleeps on a doorbell (publish/doorbell.hpp) once the ring
// has been empty for a while, and drains once more when stopped.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "log/log_format.hpp"
#include "pipeline/frame_ring.hpp"
#include "publish/doorbell.hpp"

namespace itchbench {

class FrameHandoff {
 public:
  using Send = std::function<void(const uint8_t* frame, size_t bytes)>;
  FrameHandoff(uint64_t poll_interval_us, size_t frame_bytes)
      : poll_interval_us_(poll_interval_us), ring_(frame_bytes, FrameRing::frames_within(frame_bytes, kRingBudget)) {}
  ~FrameHandoff() { stop(); }
  FrameHandoff(const FrameHandoff&) = delete;
  FrameHandoff& operator=(const FrameHandoff&) = delete;

  void push(const void* frame) {  // hot path: the ring's frame_bytes
    if (ring_.push(frame)) {
      ++handed_;
      doorbell_.mark();
    } else {
      ++ring_dropped_;
    }
  }
  void after_input() { doorbell_.ring(); }  // hot-path thread, once a datagram or line is done
  void start(const std::string& thread_name, Send send, std::function<void()> after_drain);
  void stop();  // the last drain, then joins; idempotent
  uint64_t handed() const { return handed_; }
  uint64_t ring_dropped() const { return ring_dropped_; }

 private:
  static constexpr size_t kRingBudget = size_t(16) << 20;  // bytes of frames the hot path may have waiting
  bool drain();  // true when it sent a frame
  uint64_t poll_interval_us_;
  FrameRing ring_;
  Doorbell doorbell_;
  uint64_t handed_ = 0, ring_dropped_ = 0;  // hot-path thread only
  Send send_;
  std::function<void()> after_drain_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace itchbench
