#include "net/udp_frame.hpp"

#include <cstring>

#include "protocol/endian.hpp"

namespace itchbench::net {

bool is_supported_linktype(int linktype) {
  return linktype == kLinkEthernet || linktype == kLinkRaw || linktype == kLinkLinuxSll ||
         linktype == kLinkLinuxSll2 || linktype == kLinkIpv4;
}

const char* to_string(FrameStatus s) {
  switch (s) {
    case FrameStatus::kOk: return "ok";
    case FrameStatus::kTruncated: return "frame truncated";
    case FrameStatus::kNotIpv4: return "not IPv4";
    case FrameStatus::kNotUdp: return "not UDP";
    case FrameStatus::kFragment: return "IPv4 fragment";
    case FrameStatus::kBadIpHeader: return "bad IPv4 header";
    case FrameStatus::kBadUdpLength: return "UDP length disagrees with IP length";
  }
  return "?";
}

namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88A8;

// Sets *ip to the IPv4 header, or returns why there is none.
FrameStatus find_ipv4(int linktype, const uint8_t* f, size_t n, size_t& ip_off) {
  uint16_t ethertype = 0;
  size_t off = 0;
  switch (linktype) {
    case kLinkEthernet:
      if (n < 14) return FrameStatus::kTruncated;
      ethertype = load_be16(f + 12);
      off = 14;
      while (ethertype == kEtherVlan || ethertype == kEtherQinQ) {
        if (n < off + 4) return FrameStatus::kTruncated;
        ethertype = load_be16(f + off + 2);
        off += 4;
      }
      break;
    case kLinkLinuxSll:
      if (n < 16) return FrameStatus::kTruncated;
      ethertype = load_be16(f + 14);
      off = 16;
      break;
    case kLinkLinuxSll2:
      if (n < 20) return FrameStatus::kTruncated;
      ethertype = load_be16(f);
      off = 20;
      break;
    case kLinkRaw:
    case kLinkIpv4:
      ethertype = kEtherIpv4;
      break;
    default:
      return FrameStatus::kNotIpv4;
  }
  if (ethertype != kEtherIpv4) return FrameStatus::kNotIpv4;
  ip_off = off;
  return FrameStatus::kOk;
}

uint32_t sum16(const uint8_t* p, size_t len, uint32_t acc) {
  for (; len > 1; p += 2, len -= 2) acc += load_be16(p);
  if (len) acc += uint32_t(*p) << 8;
  return acc;
}
uint16_t fold(uint32_t acc) {
  while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
  return uint16_t(~acc);
}

}  // namespace

FrameStatus extract_udp(int linktype, const uint8_t* f, size_t n, UdpDatagram& out) {
  size_t ip = 0;
  const FrameStatus link = find_ipv4(linktype, f, n, ip);
  if (link != FrameStatus::kOk) return link;
  if (n < ip + 20) return FrameStatus::kTruncated;
  if ((f[ip] >> 4) != 4) return FrameStatus::kNotIpv4;
  const size_t ihl = size_t(f[ip] & 0x0F) * 4;
  const size_t total = load_be16(f + ip + 2);
  if (ihl < 20 || total < ihl) return FrameStatus::kBadIpHeader;
  if (n < ip + total) return FrameStatus::kTruncated;  // captured short, or frame short
  const uint16_t frag = load_be16(f + ip + 6);
  if ((frag & 0x2000) || (frag & 0x1FFF)) return FrameStatus::kFragment;
  if (f[ip + 9] != 17) return FrameStatus::kNotUdp;
  if (total < ihl + 8) return FrameStatus::kBadIpHeader;
  const uint8_t* udp = f + ip + ihl;
  const size_t udp_len = load_be16(udp + 4);
  if (udp_len < 8 || udp_len > total - ihl) return FrameStatus::kBadUdpLength;
  out.ip_header = f + ip;
  out.src_ip = load_be32(f + ip + 12);
  out.dst_ip = load_be32(f + ip + 16);
  out.src_port = load_be16(udp);
  out.dst_port = load_be16(udp + 2);
  out.payload = udp + 8;
  out.length = udp_len - 8;
  return FrameStatus::kOk;
}

uint16_t ipv4_header_checksum(const uint8_t* header, size_t len) {
  return fold(sum16(header, len, 0));
}

uint16_t udp_checksum(uint32_t src_ip, uint32_t dst_ip, const uint8_t* udp, size_t udp_len) {
  uint32_t acc = (src_ip >> 16) + (src_ip & 0xFFFF) + (dst_ip >> 16) + (dst_ip & 0xFFFF);
  acc += 17 + uint32_t(udp_len);
  const uint16_t c = fold(sum16(udp, udp_len, acc));
  return c == 0 ? 0xFFFF : c;  // 0 means "no checksum" in UDP over IPv4
}

size_t build_udp_frame(uint8_t* out, size_t capacity, const Endpoints& ep, uint16_t ip_id,
                       const uint8_t* payload, size_t payload_len) {
  const size_t frame_len = kUdpFrameOverhead + payload_len;
  if (frame_len > capacity || 20 + 8 + payload_len > 0xFFFF) return 0;
  std::memcpy(out, ep.dst_mac, 6);
  std::memcpy(out + 6, ep.src_mac, 6);
  store_be16(out + 12, kEtherIpv4);
  uint8_t* ip = out + 14;
  ip[0] = 0x45;
  ip[1] = 0;
  store_be16(ip + 2, uint16_t(20 + 8 + payload_len));
  store_be16(ip + 4, ip_id);
  store_be16(ip + 6, 0x4000);  // don't fragment
  ip[8] = 64;
  ip[9] = 17;
  store_be16(ip + 10, 0);
  store_be32(ip + 12, ep.src_ip);
  store_be32(ip + 16, ep.dst_ip);
  store_be16(ip + 10, ipv4_header_checksum(ip, 20));
  uint8_t* udp = ip + 20;
  store_be16(udp, ep.src_port);
  store_be16(udp + 2, ep.dst_port);
  store_be16(udp + 4, uint16_t(8 + payload_len));
  store_be16(udp + 6, 0);
  std::memcpy(udp + 8, payload, payload_len);
  store_be16(udp + 6, udp_checksum(ep.src_ip, ep.dst_ip, udp, 8 + payload_len));
  return frame_len;
}

}  // namespace itchbench::net
