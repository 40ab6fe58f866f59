#include "replay/lib/mold_packetizer.hpp"

#include <stdexcept>

namespace itchbench::replay {

MoldPacketizer::MoldPacketizer(net::PcapWriter& out, const PacketizerConfig& config)
    : out_(out),
      cfg_(config),
      session_(mold::make_session(config.session)),
      builder_(payload_, config.max_payload) {
  if (cfg_.max_messages_per_packet == 0) throw std::invalid_argument("messages per packet must be >= 1");
  if (cfg_.max_payload < mold::kHeaderLength + 2 + 64 || cfg_.max_payload > sizeof payload_)
    throw std::invalid_argument("max payload out of range");
  stats_.next_sequence = cfg_.first_sequence;
  builder_.start(session_, stats_.next_sequence);
}

void MoldPacketizer::add(const uint8_t* msg, uint16_t len, uint64_t msg_ns) {
  if (builder_.count() > 0 &&
      (builder_.count() >= cfg_.max_messages_per_packet ||
       msg_ns - packet_first_ns_ > cfg_.batch_window_ns)) {
    flush();
  }
  if (builder_.count() == 0) {
    heartbeats_until(msg_ns);
    packet_first_ns_ = msg_ns;
  }
  if (!builder_.add(msg, len)) {  // payload full
    flush();
    packet_first_ns_ = msg_ns;
    if (!builder_.add(msg, len)) throw std::length_error("message larger than the packet payload");
  }
  packet_last_ns_ = msg_ns;
  ++stats_.messages;
}

void MoldPacketizer::heartbeats_until(uint64_t itch_ns) {
  if (cfg_.heartbeat_interval_ns == 0 || !sent_any_) return;
  while (itch_ns - last_sent_ns_ > cfg_.heartbeat_interval_ns) {
    builder_.start(session_, stats_.next_sequence);
    write_datagram(last_sent_ns_ + cfg_.heartbeat_interval_ns, builder_.finish_heartbeat());
    ++stats_.heartbeats;
  }
  builder_.start(session_, stats_.next_sequence);
}

void MoldPacketizer::flush() {
  if (builder_.count() == 0) return;
  const uint16_t n = builder_.count();
  write_datagram(packet_last_ns_, builder_.finish_messages());
  ++stats_.message_packets;
  stats_.next_sequence += n;
  builder_.start(session_, stats_.next_sequence);
}

void MoldPacketizer::write_datagram(uint64_t itch_ns, size_t len) {
  const size_t frame_len =
      net::build_udp_frame(frame_, sizeof frame_, cfg_.endpoints, ip_id_++, payload_, len);
  out_.write(cfg_.epoch_base_ns + itch_ns, frame_, frame_len);
  last_sent_ns_ = itch_ns;
  sent_any_ = true;
  ++stats_.packets;
}

void MoldPacketizer::finish(bool end_of_session) {
  flush();
  if (end_of_session) {
    builder_.start(session_, stats_.next_sequence);
    // One microsecond after the last packet, so capture time keeps increasing.
    write_datagram(last_sent_ns_ + 1000, builder_.finish_end_of_session());
    ++stats_.end_of_session;
  }
}

}  // namespace itchbench::replay
