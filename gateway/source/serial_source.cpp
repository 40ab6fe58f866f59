#include "source/serial_source.hpp"

#include <boost/asio.hpp>
#include <boost/asio/serial_port.hpp>
#include <chrono>
#include <stdexcept>

#include "source/stop_flag.hpp"
#include "source/stop_timer.hpp"

namespace itchbench {

namespace asio = boost::asio;

struct SerialSource::Impl {
  asio::io_context io;
  asio::serial_port port{io};
  asio::steady_timer timer{io};
  uint8_t buffer[4096];
};

SerialSource::SerialSource(const SerialSourceOptions& options) : impl_(new Impl), options_(options) {
  try {
    impl_->port.open(options.device);
    impl_->port.set_option(asio::serial_port_base::baud_rate(options.baud));
    impl_->port.set_option(asio::serial_port_base::character_size(8));
    impl_->port.set_option(asio::serial_port_base::parity(asio::serial_port_base::parity::none));
    impl_->port.set_option(asio::serial_port_base::stop_bits(asio::serial_port_base::stop_bits::one));
    impl_->port.set_option(asio::serial_port_base::flow_control(asio::serial_port_base::flow_control::none));
  } catch (const boost::system::system_error& e) {
    delete impl_;
    throw std::runtime_error("serial port " + options.device + ": " + e.what());
  }
}

SerialSource::~SerialSource() { delete impl_; }

void SerialSource::run(const StageClock& clock, const OnMessage& on_message) {
  Impl& im = *impl_;
  bool done = false;
  auto last_rx = std::chrono::steady_clock::now();
  auto finish = [&](const char* why) {
    if (done) return;
    done = true;
    stats_.stop_reason = why;
    im.io.stop();
  };

  std::function<void()> arm_read = [&] {
    im.port.async_read_some(asio::buffer(im.buffer), [&](const boost::system::error_code& ec, size_t n) {
      if (done) return;
      if (ec) {
        finish("serial port closed");
        return;
      }
      const uint64_t t_receive = clock.now();
      last_rx = std::chrono::steady_clock::now();
      bool ended = false;
      reader_.feed(
          im.buffer, n,
          [&](uint64_t seq, uint64_t t_send, const uint8_t* msg, size_t len) {
            if (sequence_.on_packet(seq, 1) == 0) on_message(seq, msg, len, logfmt::Arrival{0, t_receive, t_send});
          },
          [&](uint64_t next_seq) {
            sequence_.on_packet(next_seq, 0);
            ended = true;
          });
      if (ended) {
        finish("end of session");
        return;
      }
      arm_read();
    });
  };
  const char* why = "";
  auto should_stop = [&] {
    if (done) return true;
    if (stop_requested().load()) why = "signal";
    else if (options_.idle_exit_ms && reader_.counters().bytes > 0 &&
             std::chrono::steady_clock::now() - last_rx > std::chrono::milliseconds(options_.idle_exit_ms))
      why = "idle timeout";
    return *why != '\0';
  };
  arm_read();
  arm_stop_timer(im.timer, should_stop, [&] { finish(why); });
  im.io.run();
}

}  // namespace itchbench
