// Link/IPv4/UDP framing: finds the UDP payload in a captured frame, and
// builds Ethernet+IPv4+UDP frames with correct checksums for capture writers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace itchbench::net {

// Link types we read (libpcap DLT_* values).
constexpr int kLinkEthernet = 1;     // DLT_EN10MB, with 802.1Q / 802.1ad tags
constexpr int kLinkRaw = 12;         // DLT_RAW on Linux (LINKTYPE_RAW, 101)
constexpr int kLinkLinuxSll = 113;   // DLT_LINUX_SLL ("any" device)
constexpr int kLinkLinuxSll2 = 276;  // DLT_LINUX_SLL2
constexpr int kLinkIpv4 = 228;       // DLT_IPV4
bool is_supported_linktype(int linktype);

enum class FrameStatus : uint8_t {
  kOk,
  kTruncated,      // the captured bytes end inside a header or the datagram
  kNotIpv4,        // another ethertype / IP version (counted, not an error)
  kNotUdp,         // another IP protocol (counted, not an error)
  kFragment,       // IPv4 fragment: reassembly is out of scope
  kBadIpHeader,    // IHL or total length impossible
  kBadUdpLength,   // UDP length disagrees with the IP payload
};
const char* to_string(FrameStatus s);

struct UdpDatagram {
  const uint8_t* ip_header = nullptr;  // where the IPv4 datagram starts, past any link header and tags
  const uint8_t* payload = nullptr;
  size_t length = 0;
  uint32_t src_ip = 0;  // host byte order
  uint32_t dst_ip = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
};

FrameStatus extract_udp(int linktype, const uint8_t* frame, size_t caplen, UdpDatagram& out);

struct Endpoints {
  uint8_t src_mac[6] = {0x02, 0, 0, 0, 0, 0x02};
  uint8_t dst_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
  uint32_t src_ip = 0x7F000002;  // 127.0.0.2: captures we write never name a routable host
  uint32_t dst_ip = 0x7F000001;  // 127.0.0.1
  uint16_t src_port = 26400;
  uint16_t dst_port = 26477;
};

constexpr size_t kUdpFrameOverhead = 14 + 20 + 8;

// Writes an Ethernet II + IPv4 (no options, DF) + UDP frame around payload.
// Returns the frame length, or 0 if it does not fit in capacity.
size_t build_udp_frame(uint8_t* out, size_t capacity, const Endpoints& ep, uint16_t ip_id,
                       const uint8_t* payload, size_t payload_len);

// Internet checksum (RFC 1071) helpers, exposed for tests.
uint16_t ipv4_header_checksum(const uint8_t* header, size_t len);
uint16_t udp_checksum(uint32_t src_ip, uint32_t dst_ip, const uint8_t* udp, size_t udp_len);

}  // namespace itchbench::net
