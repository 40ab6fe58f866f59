// TCP publisher on 127.0.0.1. Subscribers receive every BBO event as a
// 48-byte frame, byte for byte the BBO log's record (gateway/log/FORMAT.md);
// a second publisher of the same kind, on its own port, carries depth events
// (frames of options.frame_bytes: the depth log's records).
//
// The hot path only pushes the event into a lock-free SPSC ring (publish();
// no syscall, no allocation). A publisher thread running a Boost.Asio
// io_context drains the ring into a bounded queue per subscriber and writes
// asynchronously. A subscriber whose queue is full — slow or stuck — loses
// frames (counted) or is disconnected, by policy; it never slows the hot
// path. Each subscriber socket's send buffer is capped (256 KiB) so that a
// stuck one is noticed after a bounded amount of data. If the publisher
// thread itself falls behind, the ring refuses
// events and the hot path counts them as dropped.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "book/bbo.hpp"
#include "log/log_format.hpp"
#include "pipeline/frame_ring.hpp"
#include "publish/doorbell.hpp"

namespace itchbench {

enum class SlowSubscriberPolicy { kDrop, kDisconnect };

struct PublisherCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> disconnected{0};       // subscriber closed or errored
  std::atomic<uint64_t> slow_disconnects{0};   // closed by policy
  std::atomic<uint64_t> frames_sent{0};        // summed over subscribers
  std::atomic<uint64_t> frames_dropped{0};     // subscriber queue full (drop policy)
  uint64_t ring_dropped = 0;                   // hot path: ring full (hot-path thread only)
  uint64_t published = 0;                      // hot path: events handed over
  std::atomic<uint64_t> parks{0};              // the thread slept on the doorbell after an idle stretch
  std::atomic<uint64_t> missed_bells{0};       // it woke by its timeout and found frames waiting
};

// One subscriber's share of the stream, for per-subscriber reconciliation:
// what a slow or stuck subscriber lost is counted against it alone.
struct SubscriberReport {
  uint64_t connection = 0;      // 0 for the first to connect, and so on
  uint16_t peer_port = 0;       // the subscriber's own (local) TCP port
  uint64_t frames_sent = 0;
  uint64_t frames_dropped = 0;  // its queue was full (drop policy)
  std::string closed_by;        // "", "policy" (slow, disconnect policy), "peer" (it left or errored)
};

struct PublisherOptions {
  uint16_t port = 0;  // 0: any free port
  size_t subscriber_queue = 8192;  // frames per subscriber
  SlowSubscriberPolicy policy = SlowSubscriberPolicy::kDrop;
  uint64_t poll_interval_us = 50;  // how often the thread drains the ring while frames come
  bool park_when_idle = true;      // false: poll every interval whatever comes (busy polling)
  int cpu = -1;                    // pin the publisher thread
  size_t frame_bytes = sizeof(logfmt::BboRecord);  // every frame's size: a BBO record, or a depth record
  const char* thread_name = "bbo-publisher";
};

class TcpPublisher {
 public:
  explicit TcpPublisher(const PublisherOptions& options);  // binds; throws on failure
  ~TcpPublisher();

  uint16_t port() const { return port_; }
  void start();  // the publisher thread; pinned() says whether options.cpu was granted
  // Blocks until n subscribers are connected or timeout_ms passes.
  bool wait_for_subscribers(uint64_t n, uint64_t timeout_ms) const;

  void publish(const logfmt::BboRecord& frame) { publish_frame(&frame); }  // hot path, a BBO publisher
  void publish_frame(const void* frame) {  // hot path: options.frame_bytes bytes
    if (ring_.push(frame)) {
      ++counters_.published;
      doorbell_.mark();
    } else {
      ++counters_.ring_dropped;
    }
  }
  void after_input() { doorbell_.ring(); }  // hot-path thread, once a datagram or line is done
  uint64_t doorbell_rings() const { return doorbell_.rings(); }  // hot-path thread

  // Drains the ring, gives subscribers up to flush_ms to receive what is
  // queued, closes them and joins the thread.
  void stop(uint64_t flush_ms = 2000);
  const PublisherCounters& counters() const { return counters_; }
  // Every subscriber that connected, in connection order (after stop()).
  std::vector<SubscriberReport> subscriber_reports() const;
  bool pinned() const { return pinned_.load(); }
  const std::string& pin_error() const { return pin_error_; }

 private:
  struct Impl;
  void accept_next();
  bool drain();  // true when it moved a frame
  void tick();
  void park();
  void wake(bool by_timeout);

  std::unique_ptr<Impl> impl_;
  PublisherOptions options_;
  uint16_t port_ = 0;
  FrameRing ring_;
  Doorbell doorbell_;
  PublisherCounters counters_;
  std::thread thread_;
  std::atomic<bool> pinned_{false};
  std::string pin_error_;
};

}  // namespace itchbench
