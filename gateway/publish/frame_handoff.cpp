#include "publish/frame_handoff.hpp"

#include <poll.h>

#include <chrono>

#include "util/realtime.hpp"
#include "util/thread_noise.hpp"

namespace itchbench {

bool FrameHandoff::drain() {
  bool sent = false;
  for (const uint8_t* frame; (frame = ring_.front()) != nullptr; ring_.pop()) {
    send_(frame, ring_.frame_bytes());
    sent = true;
  }
  if (after_drain_) after_drain_();
  return sent;
}

void FrameHandoff::start(const std::string& thread_name, Send send, std::function<void()> after_drain) {
  send_ = std::move(send);
  after_drain_ = std::move(after_drain);
  thread_ = std::thread([this, thread_name] {
    leave_hot_thread_alone();
    name_current_thread(thread_name.c_str());
    uint32_t idle_polls = 0;
    while (!stopping_.load(std::memory_order_acquire)) {
      idle_polls = drain() ? 0 : idle_polls + 1;
      if (idle_polls >= kIdlePollsBeforePark) {
        doorbell_.park();
        if (ring_.empty() && !stopping_.load(std::memory_order_acquire)) {
          pollfd bell{doorbell_.fd(), POLLIN, 0};
          ::poll(&bell, 1, int(kParkMs));  // woken by the hot path's ring, stop(), or the bound
        }
        doorbell_.unpark();
        doorbell_.clear();
        continue;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(poll_interval_us_));
    }
    drain();
  });
}

void FrameHandoff::stop() {  // on the hot-path thread, the doorbell's only ringer
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  doorbell_.mark();
  doorbell_.ring();
  thread_.join();
}

}  // namespace itchbench
