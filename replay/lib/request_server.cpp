#include "replay/lib/request_server.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "protocol/endian.hpp"

namespace itchbench::replay {

RequestServer::RequestServer(const MessageStore& store, const RequestPolicy& policy)
    : store_(store), policy_(policy), rng_(policy.seed) {
  if (policy.max_payload < mold::kHeaderLength + 2)
    throw std::invalid_argument("an answer packet needs room for its header and one message length");
}

bool RequestServer::over_rate(uint64_t client, uint64_t now_ns) {
  if (policy_.rate_limit == 0) return false;
  Window& w = windows_[client];
  if (now_ns - w.start_ns >= 1000000000ull || w.requests == 0) w = {now_ns, 0};
  return ++w.requests > policy_.rate_limit;
}

RequestOutcome RequestServer::judge(const mold::Request& r, uint64_t client, uint64_t now_ns) {
  // The rate limit counts every well-formed request, served or not: a flood is a flood.
  if (over_rate(client, now_ns)) return RequestOutcome::kRateLimited;
  if (r.session != store_.session()) return RequestOutcome::kWrongSession;
  if (r.sequence == 0) return RequestOutcome::kSequenceZero;
  if (r.count == 0) return RequestOutcome::kCountZero;
  if (store_.empty() || r.sequence > store_.last()) return RequestOutcome::kBeyondSession;
  const uint64_t oldest_held = policy_.retention && store_.last() - store_.first() + 1 > policy_.retention
                                   ? store_.last() - policy_.retention + 1
                                   : store_.first();
  if (r.sequence < oldest_held) return RequestOutcome::kOutsideRetention;
  return RequestOutcome::kServed;
}

RequestOutcome RequestServer::handle(const uint8_t* data, size_t len, uint64_t client, uint64_t now_ns,
                                     std::vector<AnswerPacket>& answers, std::vector<uint8_t>& packets,
                                     uint64_t session_ended_ns, uint64_t answer_after_end_ns) {
  answers.clear();
  packets.clear();
  ++counts_.requests;
  RequestOutcome outcome;
  if (!mold::parse_request(data, len, last_)) {
    last_ = mold::Request{};
    outcome = RequestOutcome::kWrongLength;
  } else if (session_ended_ns && now_ns - session_ended_ns > answer_after_end_ns) {
    outcome = RequestOutcome::kAfterEndOfSession;
  } else {
    outcome = judge(last_, client, now_ns);
  }
  ++counts_.by_outcome[size_t(outcome)];
  if (outcome != RequestOutcome::kServed) return outcome;

  // The messages asked for that the session has, capped, in packets of at most max_payload bytes.
  uint64_t wanted = std::min<uint64_t>(last_.count, store_.last() - last_.sequence + 1);
  if (policy_.max_messages) wanted = std::min<uint64_t>(wanted, policy_.max_messages);
  uint64_t seq = last_.sequence;
  const uint64_t end = last_.sequence + wanted;
  while (seq < end) {
    uint16_t len = 0;
    store_.message(seq, len);
    // The first message of a packet always goes, alone if it is larger than the payload allows.
    const size_t cap = std::max(policy_.max_payload, mold::kHeaderLength + 2 + size_t(len));
    const size_t at = packets.size();
    packets.resize(at + cap);
    mold::PacketBuilder b(packets.data() + at, cap);
    b.start(store_.session(), seq);
    while (seq < end) {
      const uint8_t* msg = store_.message(seq, len);
      if (!b.add(msg, len)) break;
      ++seq;
    }
    const uint16_t count = b.count();
    const size_t n = b.finish_messages();
    packets.resize(at + n);
    answers.push_back({seq - count, count, at, n});
  }
  return outcome;
}

bool RequestServer::drop_answer() {
  const bool drop = policy_.drop_ppm && rng_.chance_ppm(policy_.drop_ppm);
  if (drop) ++counts_.answers_dropped;
  return drop;
}

void RequestServer::sent(const AnswerPacket& a) {
  ++counts_.answer_packets;
  counts_.messages_answered += a.count;
}

const char* to_string(RequestOutcome o) {
  switch (o) {
    case RequestOutcome::kServed: return "served";
    case RequestOutcome::kWrongLength: return "wrong_length";
    case RequestOutcome::kWrongSession: return "wrong_session";
    case RequestOutcome::kSequenceZero: return "sequence_zero";
    case RequestOutcome::kCountZero: return "count_zero";
    case RequestOutcome::kBeyondSession: return "beyond_session";
    case RequestOutcome::kOutsideRetention: return "outside_retention";
    case RequestOutcome::kRateLimited: return "rate_limited";
    case RequestOutcome::kAfterEndOfSession: return "after_end_of_session";
  }
  return "?";
}

}  // namespace itchbench::replay
