#include "replay/lib/snapshot_server.hpp"

namespace itchbench::replay {

const char* to_string(ClientEnd e) {
  switch (e) {
    case ClientEnd::kOpen: return "open";
    case ClientEnd::kCompleted: return "completed";
    case ClientEnd::kLoggedOut: return "logged_out";
    case ClientEnd::kRejected: return "rejected";
    case ClientEnd::kTimedOut: return "timed_out";
    case ClientEnd::kMalformed: return "malformed";
    case ClientEnd::kDisconnected: return "disconnected";
    case ClientEnd::kCut: return "cut";
  }
  return "?";
}

const char* to_string(Malformed m) {
  switch (m) {
    case Malformed::kEmptyPacket: return "empty_packet";
    case Malformed::kOversize: return "oversize";
    case Malformed::kUnknownType: return "unknown_type";
    case Malformed::kServerType: return "server_packet_type";
    case Malformed::kLoginLength: return "login_length";
    case Malformed::kLoginSequence: return "login_sequence";
    case Malformed::kDataBeforeLogin: return "before_login";
    case Malformed::kSecondLogin: return "second_login";
  }
  return "?";
}

MessageStore snapshot_stream(const std::vector<std::vector<uint8_t>>& messages, const std::string& session) {
  MessageStore store(mold::make_session(session), 1);
  for (const auto& m : messages) store.add(m.data(), uint16_t(m.size()));
  return store;
}

SnapshotClient::SnapshotClient(const MessageStore& stream, const SnapshotPolicy& policy, uint64_t now_ns)
    : stream_(stream), policy_(policy), last_rx_ns_(now_ns), last_tx_ns_(now_ns) {}

void SnapshotClient::fail(Malformed why) {
  malformed_set_ = true;
  malformed_ = why;
  end_ = ClientEnd::kMalformed;
}

void SnapshotClient::login(const uint8_t* payload, size_t len, uint64_t now_ns, std::vector<uint8_t>& out) {
  soup::LoginRequest r;
  switch (soup::parse_login_request(payload, len, r)) {
    case soup::LoginParse::kWrongLength: return fail(Malformed::kLoginLength);
    case soup::LoginParse::kBadSequence: return fail(Malformed::kLoginSequence);
    case soup::LoginParse::kOk: break;
  }
  // A snapshot has no "most recent" message to start at: 0 (or blank) asks for the whole of it.
  requested_ = r.sequence ? r.sequence : 1;
  char reject = 0;
  if (r.username != policy_.username || r.password != policy_.password)
    reject = soup::kNotAuthorized;
  else if ((!r.session.empty() && r.session != policy_.session) || requested_ > stream_.last() + 1)
    reject = soup::kSessionNotAvailable;
  if (reject) {
    soup::write_login_rejected(out, reject);
    rejected_with_ = reject;
    end_ = ClientEnd::kRejected;
    return;
  }
  logged_in_ = true;
  next_ = requested_;
  login_ns_ = now_ns;
  soup::write_login_accepted(out, policy_.session, next_);
  last_tx_ns_ = now_ns;
}

void SnapshotClient::on_bytes(const uint8_t* data, size_t len, uint64_t now_ns, std::vector<uint8_t>& out) {
  if (end_ != ClientEnd::kOpen) return;
  last_rx_ns_ = now_ns;
  reader_.append(data, len);
  char type;
  const uint8_t* payload;
  size_t n;
  while (end_ == ClientEnd::kOpen) {
    switch (reader_.next(type, payload, n)) {
      case soup::StreamReader::Next::kIncomplete: return;
      case soup::StreamReader::Next::kEmptyPacket: return fail(Malformed::kEmptyPacket);
      case soup::StreamReader::Next::kOversize: return fail(Malformed::kOversize);
      case soup::StreamReader::Next::kPacket: break;
    }
    switch (type) {
      case soup::kLoginRequest:
        if (logged_in_) return fail(Malformed::kSecondLogin);
        login(payload, n, now_ns, out);
        break;
      case soup::kClientHeartbeat:
        ++client_heartbeats_;
        break;
      case soup::kLogoutRequest:
        end_ = ClientEnd::kLoggedOut;
        break;
      case soup::kUnsequencedData:  // a snapshot service takes none: counted, ignored
        if (!logged_in_) return fail(Malformed::kDataBeforeLogin);
        ++unsequenced_;
        break;
      case soup::kDebug:
        break;
      case soup::kLoginAccepted:
      case soup::kLoginRejected:
      case soup::kSequencedData:
      case soup::kServerHeartbeat:
      case soup::kEndOfSession:
        return fail(Malformed::kServerType);
      default:
        return fail(Malformed::kUnknownType);
    }
  }
}

size_t SnapshotClient::on_time(uint64_t now_ns, size_t budget, std::vector<uint8_t>& out) {
  if (end_ != ClientEnd::kOpen) return 0;
  if (now_ns - last_rx_ns_ >= policy_.client_timeout_ns) {
    end_ = ClientEnd::kTimedOut;
    return 0;
  }
  size_t written = 0;
  if (logged_in_) {
    for (; written < budget && next_ <= stream_.last(); ++written, ++next_, ++sent_) {
      uint16_t len = 0;
      const uint8_t* msg = stream_.message(next_, len);
      soup::write_packet(out, soup::kSequencedData, msg, len);
    }
    if (written) last_tx_ns_ = now_ns;
    if (written && next_ > stream_.last()) last_message_ns_ = now_ns;
    if (next_ > stream_.last() && written < budget) {  // every message out: the session ends
      soup::write_packet(out, soup::kEndOfSession);
      completed_ns_ = now_ns;
      end_ = ClientEnd::kCompleted;
      return written;
    }
  }
  if (logged_in_ && !written && now_ns - last_tx_ns_ >= policy_.heartbeat_ns) {
    soup::write_packet(out, soup::kServerHeartbeat);
    last_tx_ns_ = now_ns;
  }
  return written;
}

}  // namespace itchbench::replay
