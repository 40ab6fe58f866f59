// The periodic check every live source runs beside its reads: stop on a
// signal, an idle timeout or whatever else should_stop() says.
#pragma once
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

namespace itchbench {

// Calls should_stop() every 20 ms until it returns true (then on_stop()) or
// the timer is cancelled.
inline void arm_stop_timer(boost::asio::steady_timer& timer, std::function<bool()> should_stop,
                           std::function<void()> on_stop) {
  timer.expires_after(std::chrono::milliseconds(20));
  timer.async_wait([&timer, should_stop = std::move(should_stop), on_stop = std::move(on_stop)](
                       const boost::system::error_code& ec) mutable {
    if (ec) return;
    if (should_stop())
      on_stop();
    else
      arm_stop_timer(timer, std::move(should_stop), std::move(on_stop));
  });
}

}  // namespace itchbench
