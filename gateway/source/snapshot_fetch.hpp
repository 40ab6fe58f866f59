// A late joiner's snapshot (docs/snapshot.md): logs in to the exchange's
// snapshot service over SoupBinTCP on a thread of its own, while the receive
// thread holds the live feed, and collects the snapshot's messages and the
// number its End of Snapshot carries. A connection lost midway is taken up
// again with a login at the next message, a few times; a rejected login is
// final. The receive thread polls done() and then reads the result: the
// thread's only hand-over is that flag (release/acquire).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace itchbench {

struct SnapshotFetchOptions {
  std::string addr;  // IPv4
  uint16_t port = 0;
  std::string username = "itch", password = "bench", session;  // session "": the server's current one
  uint32_t max_connections = 5;      // the first and the ones that take up a lost connection
  uint64_t silence_timeout_ms = 5000;  // a server silent this long (it heartbeats every second) is lost
};

struct SnapshotResult {
  bool ok = false;
  std::string error;                           // why not, when not ok
  std::vector<std::vector<uint8_t>> messages;  // the snapshot's ITCH messages, End of Snapshot excluded
  uint64_t next_sequence = 0;                  // what End of Snapshot carried: the first live message to apply
  uint64_t timestamp = 0;                      // the snapshot's moment: its last ITCH message's timestamp
  uint64_t bytes = 0;                          // read from the server, SoupBinTCP framing included
  uint32_t connections = 0;
  uint64_t server_heartbeats = 0;
  uint64_t started_ns = 0, done_ns = 0;        // CLOCK_MONOTONIC: the first connect, the End of Snapshot
};

class SnapshotFetch {
 public:
  explicit SnapshotFetch(const SnapshotFetchOptions& options);  // starts the thread
  ~SnapshotFetch();                                             // waits for it (it stops at a stop request)
  bool done() const { return done_.load(std::memory_order_acquire); }
  const SnapshotResult& result() const { return result_; }  // once done()

 private:
  void run();
  bool session(uint64_t& received);  // one connection; false: do not try again

  SnapshotFetchOptions options_;
  SnapshotResult result_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace itchbench
