#include "replay/lib/packetizer_options.hpp"

#include <stdexcept>

#include "replay/lib/itch_file_writer.hpp"

namespace itchbench::replay {

void add_packetizer_options(cli::Args& args, const PacketizerDefaults& d) {
  auto described = [](const std::string& help, const std::string& note) { return note.empty() ? help : help + " " + note; };
  args.option("per-packet", "N", described("most messages in one MoldUDP64 packet", d.per_packet_note),
              d.per_packet_note.empty() ? std::to_string(d.per_packet) : "");
  args.option("batch-window-ns", "NS", described("only batch messages this close in time", d.batch_window_note),
              d.batch_window_note.empty() ? std::to_string(d.batch_window_ns) : "");
  args.option("heartbeat-ms", "MS", "heartbeat after this much idle time, 0 for none", "1000");
  args.option("end-of-session", "yes|no", "finish with a MoldUDP64 end-of-session packet", "yes");
  args.option("date", "YYYY-MM-DD", "session date for pcap timestamps (UTC)", "2024-01-02");
  args.option("session", "NAME", "MoldUDP64 session name (10 characters at most)", "ITCHBENCH0");
  args.option("port", "PORT", "UDP destination port (packets go 127.0.0.2 -> 127.0.0.1)", "26477");
  args.option("first-sequence", "N",
              "MoldUDP64 sequence number of the first message, 1..2^62 (a capture taken mid-session starts high)", "1");
}

bool end_of_session(const cli::Args& args) {
  const std::string eos = args.get("end-of-session");
  if (eos != "yes" && eos != "no") args.fail("--end-of-session takes yes or no");
  return eos == "yes";
}

PacketizerConfig packetizer_config(const cli::Args& args, const PacketizerDefaults& d) {
  PacketizerConfig pc;
  pc.session = args.get("session");
  if (pc.session.size() > 10) args.fail("--session: 10 characters at most");
  pc.max_messages_per_packet = uint32_t(args.has("per-packet") ? args.get_u64("per-packet") : d.per_packet);
  if (pc.max_messages_per_packet == 0) args.fail("--per-packet must be at least 1");
  pc.batch_window_ns = args.has("batch-window-ns") ? args.get_u64("batch-window-ns") : d.batch_window_ns;
  pc.heartbeat_interval_ns = args.get_u64("heartbeat-ms") * 1000000ull;
  try {
    pc.epoch_base_ns = epoch_ns_of_date(args.get("date"));
  } catch (const std::invalid_argument& e) {
    args.fail(std::string("--date: ") + e.what());
  }
  const uint64_t port = args.get_u64("port");
  if (port == 0 || port > 65535) args.fail("--port must be 1..65535");
  pc.endpoints.dst_port = uint16_t(port);
  pc.first_sequence = args.get_u64("first-sequence");
  // 0 is no message's number; below 2^62 a session's numbers stay below 2^63, which the harness's tables hold as
  // signed 64-bit integers (CSV and JSON outputs read by pandas).
  if (pc.first_sequence == 0 || pc.first_sequence > (uint64_t(1) << 62))
    args.fail("--first-sequence must be 1..2^62");
  end_of_session(args);  // validate early
  return pc;
}

}  // namespace itchbench::replay
