#include "publish/frame_handoff.hpp"

#include <chrono>

#include "util/realtime.hpp"
#include "util/thread_noise.hpp"

namespace itchbench {

void FrameHandoff::drain() {
  logfmt::BboRecord r;
  while (ring_.pop(r)) send_(r);
  if (after_drain_) after_drain_();
}

void FrameHandoff::start(const std::string& thread_name, Send send, std::function<void()> after_drain) {
  send_ = std::move(send);
  after_drain_ = std::move(after_drain);
  thread_ = std::thread([this, thread_name] {
    leave_hot_thread_alone();
    name_current_thread(thread_name.c_str());
    while (!stopping_.load(std::memory_order_acquire)) {
      drain();
      std::this_thread::sleep_for(std::chrono::microseconds(poll_interval_us_));
    }
    drain();
  });
}

void FrameHandoff::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  thread_.join();
}

}  // namespace itchbench
