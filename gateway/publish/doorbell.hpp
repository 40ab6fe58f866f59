// How a publisher thread that has found its ring empty for a while sleeps
// until the hot path has something for it, instead of waking every poll
// interval: an eventfd the hot path writes only while the consumer says it
// is parked. A busy feed never parks the consumer, so its hot path pays one
// relaxed load a frame; the first frame after an idle stretch pays the
// write (a syscall) and wakes it.
//
// There is no fence between the hot path's push and its look at `parked_`
// (one on every frame would cost more than the write it saves), so a frame
// pushed just as the consumer parks can miss the bell: the consumer's park
// is bounded (its caller waits with a timeout), so such a frame waits at
// most that long. Counted: rings(), and the consumer's parks.
#pragma once
#include <atomic>
#include <cstdint>

namespace itchbench {

class Doorbell {
 public:
  Doorbell();  // throws std::runtime_error when no eventfd can be had
  ~Doorbell();
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  int fd() const { return fd_; }
  void ring() {  // hot path, after a push
    if (parked_.load(std::memory_order_relaxed) && parked_.exchange(false, std::memory_order_acq_rel)) wake();
  }
  // Consumer: say it is about to sleep (then look at the ring once more before it does), or that it is awake.
  void park() { parked_.store(true, std::memory_order_seq_cst); }
  void unpark() { parked_.store(false, std::memory_order_relaxed); }
  void clear();                                  // consumer: consume the eventfd's count after a wake
  uint64_t rings() const { return rings_; }      // hot-path thread only

 private:
  void wake();
  int fd_ = -1;
  std::atomic<bool> parked_{false};
  uint64_t rings_ = 0;
};

// When the consumer parks: after this many empty polls in a row (at 50 us, 1 ms idle), for at most kParkMs.
constexpr uint32_t kIdlePollsBeforePark = 20;
constexpr uint32_t kParkMs = 20;

}  // namespace itchbench
