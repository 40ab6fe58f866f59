// Turns a timed stream of ITCH messages into MoldUDP64 packets written to a
// pcap as Ethernet/IPv4/UDP frames. Shared by the session generator,
// itch2pcap and the fault injector.
#pragma once
#include <cstdint>
#include <string>

#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "protocol/moldudp64.hpp"

namespace itchbench::replay {

struct PacketizerConfig {
  std::string session = "ITCHBENCH0";
  uint64_t first_sequence = 1;
  uint32_t max_messages_per_packet = 1;
  // A packet is closed when the next message is more than this after the
  // packet's first message: batching only within bursts, as a feed does.
  uint64_t batch_window_ns = 0;
  size_t max_payload = 1400;           // stays under a 1500-byte MTU
  uint64_t heartbeat_interval_ns = 0;  // 0: no heartbeats in idle periods
  uint64_t epoch_base_ns = 0;          // pcap time = epoch_base_ns + ITCH timestamp
  net::Endpoints endpoints;
};

struct PacketizerStats {
  uint64_t messages = 0;
  uint64_t packets = 0;  // all UDP datagrams written
  uint64_t message_packets = 0;
  uint64_t heartbeats = 0;
  uint64_t end_of_session = 0;
  uint64_t next_sequence = 0;
};

class MoldPacketizer {
 public:
  MoldPacketizer(net::PcapWriter& out, const PacketizerConfig& config);

  // msg_ns: ITCH timestamp (ns since midnight); non-decreasing.
  void add(const uint8_t* msg, uint16_t len, uint64_t msg_ns);
  // Writes any open packet, then the end-of-session packet if asked.
  void finish(bool end_of_session);
  const PacketizerStats& stats() const { return stats_; }

 private:
  void flush();
  void write_datagram(uint64_t itch_ns, size_t len);
  void heartbeats_until(uint64_t itch_ns);

  net::PcapWriter& out_;
  PacketizerConfig cfg_;
  mold::Session session_;
  uint8_t payload_[65536];
  uint8_t frame_[65536 + net::kUdpFrameOverhead];
  mold::PacketBuilder builder_;
  uint64_t packet_first_ns_ = 0;
  uint64_t packet_last_ns_ = 0;
  uint64_t last_sent_ns_ = 0;
  bool sent_any_ = false;
  uint16_t ip_id_ = 0;
  PacketizerStats stats_;
};

}  // namespace itchbench::replay
