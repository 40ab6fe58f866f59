// The feed in a capture: one MoldUDP64 flow, named by its destination
// address and port. A tap records more than the feed (other flows, ARP,
// routing protocols, a second session); everything that is not the feed is
// counted by kind and never handed to the framer (docs/feeds.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/moldudp64.hpp"

namespace itchbench {

struct Feed {
  uint32_t address = 0;  // IPv4 destination, host byte order
  uint16_t port = 0;     // UDP destination port
  bool operator==(const Feed& o) const { return address == o.address && port == o.port; }
  bool operator<(const Feed& o) const { return address != o.address ? address < o.address : port < o.port; }
};

// "ADDR:PORT" (dotted IPv4, port 1..65535). Throws std::invalid_argument
// with a message fit for a user.
Feed parse_feed(const std::string& text);
std::string to_string(const Feed& f);

// A session name as printed: trailing spaces dropped, anything not printable as \xNN.
std::string session_text(const mold::Session& s);

// What one UDP flow of a capture carries.
struct FlowCount {
  Feed destination;
  uint64_t datagrams = 0;
  uint64_t mold_packets = 0;    // datagrams that parse as whole MoldUDP64 packets
  uint64_t mold_messages = 0;   // messages in those packets
  std::vector<mold::Session> sessions;  // distinct sessions of those packets, in order of appearance
};

// Every UDP flow of a capture, counted as its datagrams go by.
class FlowCensus {
 public:
  void add(const Feed& destination, const uint8_t* payload, size_t length);
  // Flows ordered by the default choice: most MoldUDP64 messages, then most
  // datagrams, then lowest address and port.
  std::vector<FlowCount> flows() const;

 private:
  std::vector<FlowCount> flows_;
  size_t last_ = 0;  // consecutive datagrams are mostly of one flow
};

// The feed to read: `requested` if given (it must be in the capture), else
// the flow with the most MoldUDP64 messages; nullopt when the capture has no
// UDP at all. Throws std::invalid_argument, naming the flows, when the
// requested flow is absent, when the chosen flow carries more than one
// session, or when no feed was requested and the flows carry more than one.
std::optional<Feed> choose_feed(const std::vector<FlowCount>& flows, const std::optional<Feed>& requested);

}  // namespace itchbench
