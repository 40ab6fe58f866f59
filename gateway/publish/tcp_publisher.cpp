#include "publish/tcp_publisher.hpp"

#include <algorithm>
#include <cstring>

#include <unistd.h>

#include <boost/asio.hpp>
#include <chrono>
#include <deque>
#include <list>
#include <vector>

#include "util/realtime.hpp"
#include "util/thread_noise.hpp"

namespace itchbench {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr int kSendBuffer = 256 * 1024;

// One subscriber: a fixed-capacity queue of frames and at most one write in
// flight, which sends the contiguous run at the queue's head.
class Subscriber : public std::enable_shared_from_this<Subscriber> {
 public:
  Subscriber(tcp::socket socket, size_t capacity, size_t frame_bytes, PublisherCounters& counters,
             uint64_t connection)
      : socket_(std::move(socket)), capacity_(capacity), frame_bytes_(frame_bytes), frames_(capacity * frame_bytes),
        counters_(counters) {
    report_.connection = connection;
    boost::system::error_code ignored;
    report_.peer_port = socket_.remote_endpoint(ignored).port();
    socket_.set_option(tcp::no_delay(true));
    // A bounded kernel buffer: a stuck subscriber shows up as a full queue
    // after kSendBuffer bytes instead of after the autotuned maximum (MBs).
    socket_.set_option(asio::socket_base::send_buffer_size(kSendBuffer));
  }

  // False when the queue is full.
  bool enqueue(const uint8_t* frame) {
    if (size_ == capacity_) {
      ++report_.frames_dropped;
      return false;
    }
    std::memcpy(&frames_[(head_ + size_) % capacity_ * frame_bytes_], frame, frame_bytes_);
    ++size_;
    if (!writing_) write_next();
    return true;
  }
  bool open() const { return open_; }
  bool idle() const { return size_ == 0; }
  const SubscriberReport& report() const { return report_; }
  void close(const char* by = "") {
    if (!open_) return;
    report_.closed_by = by;
    open_ = false;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  void write_next() {
    if (!open_ || size_ == 0) return;
    const size_t run = std::min(size_, capacity_ - head_);
    writing_ = true;
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(&frames_[head_ * frame_bytes_], run * frame_bytes_),
                      [this, self, run](const boost::system::error_code& ec, size_t) {
                        writing_ = false;
                        if (ec) {
                          if (open_) ++counters_.disconnected;
                          close("peer");
                          return;
                        }
                        counters_.frames_sent += run;
                        report_.frames_sent += run;
                        head_ = (head_ + run) % capacity_;
                        size_ -= run;
                        write_next();
                      });
  }

  tcp::socket socket_;
  const size_t capacity_, frame_bytes_;  // frames queued at most, and each one's size
  std::vector<uint8_t> frames_;
  size_t head_ = 0, size_ = 0;
  bool writing_ = false;
  bool open_ = true;
  PublisherCounters& counters_;
  SubscriberReport report_;
};

}  // namespace

struct TcpPublisher::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer timer{io};
  asio::posix::stream_descriptor bell{io};  // the doorbell's eventfd, duplicated: Asio closes its own
  uint32_t idle_polls = 0;
  bool parked = false;
  std::list<std::shared_ptr<Subscriber>> subscribers;
  // Reports of subscribers that are gone, kept instead of the subscribers
  // themselves: a closed one's queue is freed, so reconnecting clients do
  // not grow the gateway (found by the soak).
  std::vector<SubscriberReport> closed;
  uint64_t connections = 0;
  std::atomic<uint64_t> connected{0};
  bool stopping = false;  // io thread only
  std::chrono::steady_clock::time_point flush_deadline;
};

constexpr size_t kRingBudget = size_t(16) << 20;  // bytes of frames the hot path may have waiting

TcpPublisher::TcpPublisher(const PublisherOptions& options)
    : impl_(std::make_unique<Impl>()), options_(options),
      ring_(options.frame_bytes, FrameRing::frames_within(options.frame_bytes, kRingBudget)) {
  tcp::endpoint ep(asio::ip::address_v4::loopback(), options.port);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  port_ = impl_->acceptor.local_endpoint().port();
  impl_->bell.assign(::dup(doorbell_.fd()));
}

TcpPublisher::~TcpPublisher() {
  if (thread_.joinable()) stop(0);
}

void TcpPublisher::accept_next() {
  impl_->acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec) return;  // acceptor closed
    impl_->subscribers.push_back(std::make_shared<Subscriber>(std::move(socket), options_.subscriber_queue,
                                                              options_.frame_bytes, counters_, impl_->connections++));
    ++counters_.accepted;
    ++impl_->connected;
    accept_next();
  });
}

// Moves events from the ring to every subscriber's queue (io thread).
bool TcpPublisher::drain() {
  bool moved = false;
  for (const uint8_t* frame; (frame = ring_.front()) != nullptr; ring_.pop()) {
    moved = true;
    for (auto& s : impl_->subscribers) {
      if (!s->open() || s->enqueue(frame)) continue;
      if (options_.policy == SlowSubscriberPolicy::kDisconnect) {
        ++counters_.slow_disconnects;
        s->close("policy");
      } else {
        ++counters_.frames_dropped;
      }
    }
  }
  impl_->subscribers.remove_if([this](const std::shared_ptr<Subscriber>& s) {
    if (s->open()) return false;
    impl_->closed.push_back(s->report());
    --impl_->connected;
    return true;
  });
  return moved;
}

void TcpPublisher::tick() {
  Impl& im = *impl_;
  im.idle_polls = drain() ? 0 : im.idle_polls + 1;
  if (im.stopping) {
    // Flush: wait (bounded) for the queues to empty, then close everything.
    bool pending = false;
    for (auto& s : im.subscribers) pending |= !s->idle();
    if (!pending || std::chrono::steady_clock::now() >= im.flush_deadline) {
      boost::system::error_code ignored;
      im.acceptor.close(ignored);
      for (auto& s : im.subscribers) {
        s->close();
        im.closed.push_back(s->report());
      }
      im.subscribers.clear();
      return;  // no more work: io.run() returns
    }
  } else if (options_.park_when_idle && im.idle_polls >= kIdlePollsBeforePark) {
    doorbell_.park();
    if (ring_.empty()) return park();
    doorbell_.unpark();  // a frame came as it was about to sleep
  }
  im.timer.expires_after(std::chrono::microseconds(options_.poll_interval_us));
  im.timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

// Idle: sleep until the hot path rings (the eventfd is readable) or kParkMs pass, whichever comes first. The
// other wait is cancelled; a handler that had already completed finds `parked` false and does nothing.
void TcpPublisher::park() {
  Impl& im = *impl_;
  im.parked = true;
  ++counters_.parks;
  im.bell.async_wait(asio::posix::descriptor_base::wait_read, [this](const boost::system::error_code& ec) {
    if (!ec) wake(false);
  });
  im.timer.expires_after(std::chrono::milliseconds(kParkMs));
  im.timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) wake(true);
  });
}

void TcpPublisher::wake(bool by_timeout) {
  Impl& im = *impl_;
  if (!im.parked) return;
  im.parked = false;
  boost::system::error_code ignored;
  im.bell.cancel(ignored);
  im.timer.cancel();
  doorbell_.unpark();
  doorbell_.clear();
  if (by_timeout && !ring_.empty()) ++counters_.missed_bells;  // the bell was missed (doorbell.hpp): counted
  if (!by_timeout) im.idle_polls = 0;
  tick();
}

void TcpPublisher::start() {
  thread_ = std::thread([this] {
    leave_hot_thread_alone();  // then its own pin, if it was given one
    name_current_thread(options_.thread_name);
    if (options_.cpu >= 0) {
      const std::string err = pin_current_thread(options_.cpu);
      pinned_ = err.empty();
      pin_error_ = err;
    }
    accept_next();
    tick();
    impl_->io.run();
  });
}

std::vector<SubscriberReport> TcpPublisher::subscriber_reports() const {
  std::vector<SubscriberReport> out = impl_->closed;
  std::sort(out.begin(), out.end(),
            [](const SubscriberReport& a, const SubscriberReport& b) { return a.connection < b.connection; });
  return out;
}

bool TcpPublisher::wait_for_subscribers(uint64_t n, uint64_t timeout_ms) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (impl_->connected.load() < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void TcpPublisher::stop(uint64_t flush_ms) {
  if (!thread_.joinable()) return;
  asio::post(impl_->io, [this, flush_ms] {
    impl_->stopping = true;
    impl_->flush_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(flush_ms);
    wake(false);  // asleep on the doorbell: drain and flush now (awake: nothing to do, the next tick does)
  });
  thread_.join();
}

}  // namespace itchbench
