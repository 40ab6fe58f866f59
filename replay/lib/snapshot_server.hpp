// One client of the snapshot server, as decisions (the tool owns the sockets
// and the clock): SoupBinTCP login, the snapshot as sequenced data from the
// sequence number the client asks for, server heartbeats while idle, the end
// of session after the last message, and the end of a client that logs out,
// falls silent, or sends what SoupBinTCP does not allow (docs/snapshot.md).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/soupbintcp.hpp"
#include "replay/lib/session_store.hpp"

namespace itchbench::replay {

struct SnapshotPolicy {
  std::string username = "itch", password = "bench";
  std::string session = "GLIMPSE";         // the SoupBinTCP session (10 characters at most)
  uint64_t heartbeat_ns = 1'000'000'000;   // a server heartbeat after this long without sending
  uint64_t client_timeout_ns = 15'000'000'000;  // a client silent this long (login included) is dropped
};

// How a client's connection ended (kOpen while it lasts).
enum class ClientEnd : uint8_t { kOpen, kCompleted, kLoggedOut, kRejected, kTimedOut, kMalformed, kDisconnected, kCut };
constexpr size_t kClientEnds = 8;
const char* to_string(ClientEnd e);

// Why a client's packet was not one SoupBinTCP allows it (its connection ends).
enum class Malformed : uint8_t { kEmptyPacket, kOversize, kUnknownType, kServerType, kLoginLength, kLoginSequence,
                                 kDataBeforeLogin, kSecondLogin };
constexpr size_t kMalformedReasons = 8;
const char* to_string(Malformed m);

class SnapshotClient {
 public:
  // stream: the snapshot's messages as the session's sequenced data (first sequence 1).
  SnapshotClient(const MessageStore& stream, const SnapshotPolicy& policy, uint64_t now_ns);

  // What the client sent, at now; replies are appended to out.
  void on_bytes(const uint8_t* data, size_t len, uint64_t now_ns, std::vector<uint8_t>& out);
  // Up to `budget` sequenced messages (then the end of session after the last), a heartbeat when idle, the end of
  // a silent client; appended to out. Returns the sequenced messages written.
  size_t on_time(uint64_t now_ns, size_t budget, std::vector<uint8_t>& out);
  // The connection closed under it (the peer, or the tool's fault).
  void closed(ClientEnd why) {
    if (end_ == ClientEnd::kOpen) end_ = why;
  }

  ClientEnd end() const { return end_; }
  bool logged_in() const { return logged_in_; }
  char rejected_with() const { return rejected_with_; }  // 0 when not rejected
  bool malformed() const { return malformed_set_; }
  Malformed malformed_reason() const { return malformed_; }
  uint64_t requested_sequence() const { return requested_; }
  uint64_t next_sequence() const { return next_; }  // the next sequenced message to send
  uint64_t messages_sent() const { return sent_; }
  uint64_t login_ns() const { return login_ns_; }
  uint64_t completed_ns() const { return completed_ns_; }  // when the end of session went out (0: not yet)
  uint64_t last_message_ns() const { return last_message_ns_; }  // when the last sequenced message went out (0: not yet)
  uint64_t client_heartbeats() const { return client_heartbeats_; }
  uint64_t unsequenced_ignored() const { return unsequenced_; }

 private:
  void login(const uint8_t* payload, size_t len, uint64_t now_ns, std::vector<uint8_t>& out);
  void fail(Malformed why);

  const MessageStore& stream_;
  const SnapshotPolicy& policy_;
  soup::StreamReader reader_{1024};  // nothing a client may send is longer
  ClientEnd end_ = ClientEnd::kOpen;
  bool logged_in_ = false, malformed_set_ = false;
  Malformed malformed_ = Malformed::kEmptyPacket;
  char rejected_with_ = 0;
  uint64_t requested_ = 0, next_ = 0, sent_ = 0;
  uint64_t last_rx_ns_, last_tx_ns_;
  uint64_t login_ns_ = 0, completed_ns_ = 0, last_message_ns_ = 0;
  uint64_t client_heartbeats_ = 0, unsequenced_ = 0;
};

// The snapshot's messages as a SoupBinTCP session's sequenced data, numbered from 1.
MessageStore snapshot_stream(const std::vector<std::vector<uint8_t>>& messages, const std::string& session);

}  // namespace itchbench::replay
