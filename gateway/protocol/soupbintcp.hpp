// SoupBinTCP 4.x (NASDAQ's TCP session layer, under GLIMPSE and OUCH):
// every packet is a 2-byte big-endian length (the type byte and payload,
// not the length itself), a type byte and its payload. docs/snapshot.md
// lists the packets and what itchbench does with each.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace itchbench::soup {

// Packet types: server to client, then client to server.
constexpr char kDebug = '+';
constexpr char kLoginAccepted = 'A';
constexpr char kLoginRejected = 'J';
constexpr char kSequencedData = 'S';
constexpr char kServerHeartbeat = 'H';
constexpr char kEndOfSession = 'Z';
constexpr char kLoginRequest = 'L';
constexpr char kUnsequencedData = 'U';
constexpr char kClientHeartbeat = 'R';
constexpr char kLogoutRequest = 'O';

// Login rejected reasons.
constexpr char kNotAuthorized = 'A';       // wrong username or password
constexpr char kSessionNotAvailable = 'S';  // unknown session, or a sequence number past its end

constexpr size_t kUsernameLength = 6, kPasswordLength = 10, kSessionLength = 10, kSequenceLength = 20;
constexpr size_t kLoginRequestLength = kUsernameLength + kPasswordLength + kSessionLength + kSequenceLength;  // 46
constexpr size_t kHeartbeatTimeoutLength = 5;  // an optional trailing field of 4.1 logins (ms)

// Alphanumeric fields are left-justified and padded with spaces; numeric ones right-justified.
std::string alpha(const std::string& text, size_t width);  // cut or padded to width
std::string numeric(uint64_t value, size_t width);          // right-justified, spaces before
std::string trimmed(const uint8_t* field, size_t width);    // an alpha field without its padding
// A numeric field: digits with spaces around them; all spaces reads as 0. False when it is anything else.
bool parse_numeric(const uint8_t* field, size_t width, uint64_t& out);

struct LoginRequest {
  std::string username, password, session;  // without their padding; session "" asks for the current one
  uint64_t sequence = 0;                    // the next sequenced message wanted; 0: the first
};
enum class LoginParse : uint8_t { kOk, kWrongLength, kBadSequence };
// The payload after the type byte: 46 bytes, or 51 with a heartbeat timeout.
LoginParse parse_login_request(const uint8_t* payload, size_t len, LoginRequest& out);

// Writers append one whole packet.
void write_packet(std::vector<uint8_t>& out, char type, const uint8_t* payload = nullptr, size_t len = 0);
void write_login_accepted(std::vector<uint8_t>& out, const std::string& session, uint64_t next_sequence);
void write_login_rejected(std::vector<uint8_t>& out, char reason);
void write_login_request(std::vector<uint8_t>& out, const LoginRequest& request);

// A TCP stream cut into packets: bytes in as they come, whole packets out. A packet longer than max_packet
// (its length field) is not buffered: the stream is broken from there (a client's garbage must not make a
// server hold 64 KiB per connection).
class StreamReader {
 public:
  explicit StreamReader(size_t max_packet = 65535) : max_packet_(max_packet) {}
  void append(const uint8_t* data, size_t len) { buf_.insert(buf_.end(), data, data + len); }
  enum class Next : uint8_t { kPacket, kIncomplete, kEmptyPacket, kOversize };
  // The next packet's type and payload (valid until the next call), or why there is none.
  Next next(char& type, const uint8_t*& payload, size_t& len);
  size_t buffered() const { return buf_.size() - start_; }

 private:
  std::vector<uint8_t> buf_;
  size_t start_ = 0;
  size_t max_packet_;
};

}  // namespace itchbench::soup
