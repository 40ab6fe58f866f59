// What a gateway writes back on its serial line. A UART's transmitter never waits for the far end to read: what
// its receiver does not take is dropped. On a pty pair it would wait: the relay (socat) blocks writing the
// gateway's bytes to a sender that never reads them, stops relaying the sender's lines too, and the line jams. So
// the sender takes whatever comes back on a thread of its own, counts it and drops it.
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>

namespace itchbench::replay {

class LineReturn {
 public:
  // fd: the sender's end of the line, open for reading too; taken from only when it is a terminal (a pty, a serial
  // port). The thread takes no stop signal: those stay the sending thread's, to end a write that waits for room.
  explicit LineReturn(int fd);
  ~LineReturn();  // stop(), if not done
  LineReturn(const LineReturn&) = delete;
  LineReturn& operator=(const LineReturn&) = delete;

  // Stops the thread (what is waiting then is read first); the count is final after it.
  void stop();
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  void run();
  int fd_;
  int wake_ = -1;  // an eventfd: written to stop the thread
  std::atomic<uint64_t> bytes_{0};
  std::thread thread_;
};

}  // namespace itchbench::replay
