// The exchange's MoldUDP64 re-request server for one session, as decisions
// (the tool owns the socket and the clock): a request is answered with
// downstream packets of the messages it asks for, cut to a payload and a
// count, or refused for a counted reason. Its behaviour is set per run —
// delay, a cap per request, a rate limit per requester, a retention window,
// answers dropped as a fault (seeded), an end-of-session window — and it
// holds the session's messages as the capture has them, before any fault.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "log/log_format.hpp"
#include "protocol/moldudp64.hpp"
#include "replay/lib/rng.hpp"
#include "replay/lib/session_store.hpp"

namespace itchbench::replay {

using logfmt::RequestOutcome;
constexpr size_t kOutcomes = 9;  // RequestOutcome's values

struct RequestPolicy {
  uint64_t delay_ns = 0;         // an answer goes this long after its request
  uint32_t max_messages = 0;     // messages answered a request at most (0: as many as asked)
  size_t max_payload = 1400;     // bytes of an answer packet, its 20-byte header included
  uint32_t rate_limit = 0;       // requests a second from one requester (address and port); 0: no limit
  uint64_t retention = 0;        // messages held, the session's last ones; 0: all of them
  uint32_t drop_ppm = 0;         // answer packets not sent, per million (a fault)
  uint64_t seed = 1;             // of the drop draw
};

struct AnswerPacket {
  uint64_t sequence;  // of its first message
  uint16_t count;
  size_t offset;      // in the packets buffer
  size_t length;
};

struct RequestCounts {
  uint64_t requests = 0;
  std::array<uint64_t, kOutcomes> by_outcome{};
  uint64_t answer_packets = 0;    // sent
  uint64_t answers_dropped = 0;   // not sent: the fault
  uint64_t messages_answered = 0; // in the packets sent
};

class RequestServer {
 public:
  RequestServer(const MessageStore& store, const RequestPolicy& policy);

  // Judges one datagram from `client` at now_ns. Served: its answer packets are written to `packets` (cleared
  // first) and listed in `answers`. session_ended_ns: when the feed's end of session was announced (0: not
  // yet); answer_after_end_ns: how long the server still answers after it (UINT64_MAX: always).
  RequestOutcome handle(const uint8_t* data, size_t len, uint64_t client, uint64_t now_ns,
                        std::vector<AnswerPacket>& answers, std::vector<uint8_t>& packets,
                        uint64_t session_ended_ns = 0, uint64_t answer_after_end_ns = UINT64_MAX);
  // The fault draw for one answer packet: true when it is to be dropped (and counted).
  bool drop_answer();
  void sent(const AnswerPacket& a);  // counts an answer packet that went out

  const RequestCounts& counts() const { return counts_; }
  const mold::Request& last_request() const { return last_; }  // the request handle() parsed last

 private:
  RequestOutcome judge(const mold::Request& r, uint64_t client, uint64_t now_ns);
  bool over_rate(uint64_t client, uint64_t now_ns);

  const MessageStore& store_;
  RequestPolicy policy_;
  Rng rng_;
  RequestCounts counts_;
  mold::Request last_;
  struct Window {
    uint64_t start_ns = 0;
    uint32_t requests = 0;
  };
  std::unordered_map<uint64_t, Window> windows_;  // per requester: requests in the current second
};

const char* to_string(RequestOutcome o);  // snake_case, as the report and the harness name it

}  // namespace itchbench::replay
