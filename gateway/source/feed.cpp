#include "source/feed.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace itchbench {

Feed parse_feed(const std::string& text) {
  const size_t colon = text.rfind(':');
  const std::string usage = "feed '" + text + "': expected ADDR:PORT, e.g. 233.54.12.111:26477";
  if (colon == std::string::npos) throw std::invalid_argument(usage);
  in_addr a{};
  if (::inet_pton(AF_INET, text.substr(0, colon).c_str(), &a) != 1) throw std::invalid_argument(usage);
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(usage);
  const unsigned long p = std::stoul(port);
  if (p == 0 || p > 65535) throw std::invalid_argument("feed '" + text + "': port must be 1..65535");
  return Feed{ntohl(a.s_addr), uint16_t(p)};
}

std::string to_string(const Feed& f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u:%u", f.address >> 24, (f.address >> 16) & 0xFF,
                (f.address >> 8) & 0xFF, f.address & 0xFF, unsigned(f.port));
  return buf;
}

std::string session_text(const mold::Session& s) {
  size_t n = s.size();
  while (n > 0 && s[n - 1] == ' ') --n;
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += char(c);
    } else {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02X", c);
      out += esc;
    }
  }
  return out;
}

void FlowCensus::add(const Feed& destination, const uint8_t* payload, size_t length) {
  if (last_ >= flows_.size() || !(flows_[last_].destination == destination)) {
    auto it = std::find_if(flows_.begin(), flows_.end(), [&](const FlowCount& f) { return f.destination == destination; });
    if (it == flows_.end()) {
      flows_.push_back(FlowCount{destination, 0, 0, 0, {}});
      it = flows_.end() - 1;
    }
    last_ = size_t(it - flows_.begin());
  }
  FlowCount& f = flows_[last_];
  ++f.datagrams;
  mold::Packet pkt;
  if (mold::parse(payload, length, pkt) != mold::ParseStatus::kOk) return;
  ++f.mold_packets;
  f.mold_messages += pkt.count();
  // The session is the packet's first bytes. A flow mostly carries one, the last it met: compared in place
  // first (the census is a pass over the whole capture before a pcap's run).
  if (!f.sessions.empty() && std::memcmp(f.sessions.back().data(), payload, mold::kSessionLength) == 0) return;
  mold::Session s;
  std::copy(payload, payload + mold::kSessionLength, s.begin());
  if (std::find(f.sessions.begin(), f.sessions.end(), s) == f.sessions.end()) f.sessions.push_back(s);
}

std::vector<FlowCount> FlowCensus::flows() const {
  std::vector<FlowCount> out = flows_;
  std::sort(out.begin(), out.end(), [](const FlowCount& a, const FlowCount& b) {
    if (a.mold_messages != b.mold_messages) return a.mold_messages > b.mold_messages;
    if (a.datagrams != b.datagrams) return a.datagrams > b.datagrams;
    return a.destination < b.destination;
  });
  return out;
}

namespace {

std::string describe(const FlowCount& f) {
  std::string s = to_string(f.destination) + " (" + std::to_string(f.mold_messages) + " MoldUDP64 messages in " +
                  std::to_string(f.datagrams) + " datagrams";
  for (const mold::Session& session : f.sessions) s += ", session '" + session_text(session) + "'";
  return s + ")";
}

std::string describe_all(const std::vector<FlowCount>& flows) {
  std::string s;
  for (const FlowCount& f : flows) s += (s.empty() ? "" : "; ") + describe(f);
  return s.empty() ? "none" : s;
}

}  // namespace

std::optional<Feed> choose_feed(const std::vector<FlowCount>& flows, const std::optional<Feed>& requested) {
  const FlowCount* chosen = nullptr;
  if (requested) {
    for (const FlowCount& f : flows)
      if (f.destination == *requested) chosen = &f;
    if (!chosen)
      throw std::invalid_argument("feed " + to_string(*requested) + ": no UDP datagram to it in the capture (flows: " +
                                  describe_all(flows) + ")");
  } else {
    if (flows.empty()) return std::nullopt;
    std::vector<mold::Session> sessions;
    for (const FlowCount& f : flows)
      for (const mold::Session& s : f.sessions)
        if (std::find(sessions.begin(), sessions.end(), s) == sessions.end()) sessions.push_back(s);
    if (sessions.size() > 1) {
      std::string names;
      for (const mold::Session& s : sessions) names += (names.empty() ? "'" : ", '") + session_text(s) + "'";
      throw std::invalid_argument("the capture holds " + std::to_string(sessions.size()) + " MoldUDP64 sessions (" +
                                  names + "): choose one flow with --feed ADDR:PORT (flows: " + describe_all(flows) +
                                  ")");
    }
    chosen = &flows.front();
  }
  if (chosen->sessions.size() > 1)
    throw std::invalid_argument("feed " + describe(*chosen) +
                                " carries more than one MoldUDP64 session; one feed is one session");
  return chosen->destination;
}

}  // namespace itchbench
