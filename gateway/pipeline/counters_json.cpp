#include "pipeline/counters_json.hpp"

#include <string>

namespace itchbench {

void write_mold_json(JsonWriter& j, const FramerCounters& fc) {
  j.key("mold").begin_object();
  j.field("packets", fc.packets).field("heartbeats", fc.heartbeats).field("end_of_session", fc.end_of_session);
  j.field("rejected_too_short", fc.rejected_too_short)
      .field("rejected_length_overrun", fc.rejected_length_overrun)
      .field("rejected_count_mismatch", fc.rejected_count_mismatch)
      .field("rejected_sequence_overflow", fc.rejected_sequence_overflow);
  j.field("messages", fc.messages);
  j.end_object();
}

void write_sequence_json(JsonWriter& j, const SequenceCounters& sc) {
  j.key("sequence").begin_object();
  j.field("gap_events", sc.gap_events).field("gap_messages", sc.gap_messages);
  j.field("duplicate_messages", sc.duplicate_messages).field("reordered_messages", sc.reordered_messages);
  j.field("missing_messages", sc.missing_messages());
  j.end_object();
}

void write_recovery_json(JsonWriter& j, const GapRecovery& recovery) {
  const RecoveryCounters& c = recovery.counters();
  const RecoveryOptions& o = recovery.options();
  j.key("recovery").begin_object();
  j.field("line_b", o.line_b).field("server", o.server);
  j.field("line_wait_ns", o.line_wait_ns).field("request_timeout_ns", o.request_timeout_ns);
  j.field("max_requests", uint64_t(o.max_requests)).field("hold_packets", uint64_t(o.hold_packets));
  j.key("packets").begin_object();
  for (size_t l = 0; l < kLines; ++l) j.field(kLineNames[l], c.packets[l]);
  j.end_object();
  j.key("messages_first").begin_object();
  for (size_t l = 0; l < kLines; ++l) j.field(kLineNames[l], c.messages_first[l]);
  j.end_object();
  j.field("duplicate_packets", c.duplicate_packets).field("duplicate_messages", c.duplicate_messages);
  j.field("held_packets", c.held_packets).field("held_most", c.held_most).field("held_at_end", uint64_t(recovery.held()));
  j.field("hold_full", c.hold_full).field("too_large", c.too_large);
  j.field("gaps", c.gaps).field("gaps_filled", c.gaps_filled).field("gaps_given_up", c.gaps_given_up);
  j.field("gaps_open_at_end", uint64_t(recovery.gaps_open()));
  j.field("messages_given_up", c.messages_given_up);
  j.field("requests", c.requests).field("request_retries", c.request_retries);
  j.field("messages_requested", c.messages_requested).field("request_errors", c.request_errors);
  j.field("join_held_packets", c.join_held_packets).field("join_covered_messages", c.join_covered_messages);
  j.field("join_dropped_packets", c.join_dropped_packets);
  j.end_object();
}

void write_decode_json(JsonWriter& j, const DecodeCounters& dc) {
  j.key("decode").begin_object();
  j.field("messages", dc.messages());
  j.key("per_type").begin_object();
  for (const auto& t : itch::kTypes) j.field(std::string(1, t.type), dc.per_type[itch::type_index(t.type)]);
  j.end_object();
  j.field("rejected_unknown_type", dc.unknown_type).field("rejected_wrong_length", dc.wrong_length);
  j.field("rejected_empty", dc.empty);
  j.end_object();
}

void write_capture_json(JsonWriter& j, const CaptureStats& cs, const std::optional<Feed>& feed) {
  j.key("capture_stats").begin_object();
  j.field("feed", feed ? to_string(*feed) : std::string());
  j.field("records", cs.records).field("udp_datagrams", cs.udp_datagrams);
  j.key("not_feed").begin_object();
  j.field("other_flow", cs.other_flow).field("not_udp", cs.not_udp).field("not_ipv4", cs.not_ipv4);
  j.field("fragment", cs.fragments);
  j.end_object();
  j.field("bad_frames", cs.bad_frames).field("truncated_frames", cs.truncated_frames);
  j.field("malformed_frames", cs.malformed_frames);
  j.field("itch_messages", cs.itch_messages);
  j.field("linktype", int64_t(cs.linktype));
  j.end_object();
}

void write_flows_json(JsonWriter& j, const std::vector<FlowCount>& flows) {
  j.key("flows").begin_array();
  for (const FlowCount& f : flows) {
    j.begin_object();
    j.field("destination", to_string(f.destination)).field("datagrams", f.datagrams);
    j.field("mold_packets", f.mold_packets).field("mold_messages", f.mold_messages);
    j.key("sessions").begin_array();
    for (const mold::Session& s : f.sessions) j.value(session_text(s));
    j.end_array();
    j.end_object();
  }
  j.end_array();
}

}  // namespace itchbench
