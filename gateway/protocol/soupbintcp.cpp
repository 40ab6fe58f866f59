#include "protocol/soupbintcp.hpp"

#include "protocol/endian.hpp"

namespace itchbench::soup {

std::string alpha(const std::string& text, size_t width) {
  std::string out = text.substr(0, width);
  out.resize(width, ' ');
  return out;
}

std::string numeric(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() >= width) return digits.substr(digits.size() - width);
  return std::string(width - digits.size(), ' ') + digits;
}

std::string trimmed(const uint8_t* field, size_t width) {
  size_t n = width;
  while (n > 0 && field[n - 1] == ' ') --n;
  return std::string(reinterpret_cast<const char*>(field), n);
}

bool parse_numeric(const uint8_t* field, size_t width, uint64_t& out) {
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '9'; ++i, ++digits) {
    const uint64_t d = uint64_t(field[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;  // past 2^64 - 1
    v = v * 10 + d;
  }
  while (i < width && field[i] == ' ') ++i;
  if (i != width) return false;
  out = digits ? v : 0;
  return true;
}

LoginParse parse_login_request(const uint8_t* payload, size_t len, LoginRequest& out) {
  if (len != kLoginRequestLength && len != kLoginRequestLength + kHeartbeatTimeoutLength)
    return LoginParse::kWrongLength;
  const uint8_t* p = payload;
  out.username = trimmed(p, kUsernameLength);
  p += kUsernameLength;
  out.password = trimmed(p, kPasswordLength);
  p += kPasswordLength;
  out.session = trimmed(p, kSessionLength);
  // Requested sessions are right- or left-padded in practice: leading spaces go too.
  while (!out.session.empty() && out.session.front() == ' ') out.session.erase(out.session.begin());
  p += kSessionLength;
  if (!parse_numeric(p, kSequenceLength, out.sequence)) return LoginParse::kBadSequence;
  return LoginParse::kOk;
}

void write_packet(std::vector<uint8_t>& out, char type, const uint8_t* payload, size_t len) {
  const size_t at = out.size();
  out.resize(at + 3 + len);
  store_be16(out.data() + at, uint16_t(len + 1));
  out[at + 2] = uint8_t(type);
  for (size_t i = 0; i < len; ++i) out[at + 3 + i] = payload[i];
}

void write_login_accepted(std::vector<uint8_t>& out, const std::string& session, uint64_t next_sequence) {
  const std::string body = alpha(session, kSessionLength) + numeric(next_sequence, kSequenceLength);
  write_packet(out, kLoginAccepted, reinterpret_cast<const uint8_t*>(body.data()), body.size());
}

void write_login_rejected(std::vector<uint8_t>& out, char reason) {
  const uint8_t r = uint8_t(reason);
  write_packet(out, kLoginRejected, &r, 1);
}

void write_login_request(std::vector<uint8_t>& out, const LoginRequest& request) {
  const std::string body = alpha(request.username, kUsernameLength) + alpha(request.password, kPasswordLength) +
                           alpha(request.session, kSessionLength) + numeric(request.sequence, kSequenceLength);
  write_packet(out, kLoginRequest, reinterpret_cast<const uint8_t*>(body.data()), body.size());
}

StreamReader::Next StreamReader::next(char& type, const uint8_t*& payload, size_t& len) {
  // What was handed out before is consumed now: drop it when it is all, or when it is much.
  if (start_ == buf_.size()) {
    buf_.clear();
    start_ = 0;
  } else if (start_ > 65536) {
    buf_.erase(buf_.begin(), buf_.begin() + ptrdiff_t(start_));
    start_ = 0;
  }
  const size_t have = buf_.size() - start_;
  if (have < 2) return Next::kIncomplete;
  const size_t length = load_be16(buf_.data() + start_);
  if (length == 0) return Next::kEmptyPacket;
  if (length > max_packet_) return Next::kOversize;
  if (have < 2 + length) return Next::kIncomplete;
  type = char(buf_[start_ + 2]);
  payload = buf_.data() + start_ + 3;
  len = length - 1;
  start_ += 2 + length;
  return Next::kPacket;
}

}  // namespace itchbench::soup
