// itch-inspect: frames and decodes a capture (pcap or binary ITCH file) and
// prints what it holds: per-type message counts, MoldUDP64 framing and
// sequence accounting, and every rejection by reason.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>

#include "pipeline/counters_json.hpp"
#include "pipeline/decode_counters.hpp"
#include "pipeline/mold_framer.hpp"
#include "protocol/endian.hpp"
#include "protocol/itch.hpp"
#include "source/capture_file.hpp"
#include "source/feed_option.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"

using namespace itchbench;

namespace {

// What inspect adds to the decoder's counters: where the capture starts and ends.
struct Extent {
  uint64_t first_seq = 0, last_seq = 0;
  // Capture time, ns since the epoch (pcap) or since midnight (ITCH file, the
  // messages' own stamps); the latest one bounds a replay at capture timing
  // even when stamps go backwards.
  bool any_ts = false;
  uint64_t first_ts = 0, last_ts = 0, max_ts = 0;
  void stamp(uint64_t ts) {
    if (!any_ts) first_ts = ts;
    any_ts = true;
    last_ts = ts;
    max_ts = std::max(max_ts, ts);
  }
  bool any = false;
};

// A listed message's type, one word whatever its byte: a damaged capture's type byte may be a space, a newline or
// not ASCII, which as itself would break the line it is listed on (the harness read a newline there as a line with
// no sequence number, and failed).
std::string listed_type(const uint8_t* m, size_t len) {
  if (len == 0) return "-";
  if (std::isgraph(m[0])) return std::string(1, char(m[0]));
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", unsigned(m[0]));
  return hex;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("itch-inspect", "itch-inspect [options] CAPTURE",
                 "Frame and decode an ITCH 5.0 capture (pcap/pcapng of MoldUDP64 over UDP, or a\n"
                 "NASDAQ binary ITCH file) and report per-type counts, framing and sequence\n"
                 "accounting, and rejections. A pcap's UDP flows are listed; the feed is the one\n"
                 "--feed names or else the one with the most MoldUDP64 messages, and the rest is\n"
                 "counted as not-feed by kind. Exit status: 0 clean, 1 the capture has errors or\n"
                 "rejections, 2 usage, unreadable input or no single feed (two sessions).");
  args.positional("CAPTURE", "capture file");
  args.option("feed", "ADDR:PORT", kFeedOptionHelp);
  args.flag("json", "print one JSON object instead of a table");
  args.flag("list", "print one line per message handed on in sequence order: its sequence and type (its "
                    "type byte as a character when printable, else as 0xNN; '-' for an empty message), and "
                    "'rejected' when it fails validation");
  args.flag("check", "only check that CAPTURE is a readable capture; print its kind (pcap or itch)");
  args.parse(argc, argv);

  const std::optional<Feed> requested = feed_option(args);
  try {
    CaptureReader reader(args.positionals()[0], requested);
    if (args.flag_set("check")) {
      std::printf("%s\n", to_string(reader.kind()));
      return 0;
    }
    const std::vector<FlowCount>& flows = reader.select_feed(/*check_given=*/true);
    const std::optional<Feed>& feed = reader.feed();
    MoldFramer framer;
    DecodeCounters decode;
    Extent extent;
    const bool list = args.flag_set("list");
    std::string listing;
    auto on_message = [&](uint64_t seq, const uint8_t* m, size_t len) {
      const itch::DecodeStatus st = itch::decode(m, len, [&](const auto& view) {
        ++decode.per_type[itch::type_index(view.kType)];
      });
      decode.count_rejection(st);
      if (!extent.any) extent.first_seq = seq;
      extent.any = true;
      extent.last_seq = seq;
      if (list)
        listing += std::to_string(seq) + " " + listed_type(m, len) +
                   (st == itch::DecodeStatus::kOk ? "\n" : " rejected\n");
    };
    const bool clean = reader.run(
        [&](uint64_t ts, const uint8_t* p, size_t n) {
          extent.stamp(ts);
          framer.on_datagram(p, n, on_message);
        },
        [&](uint64_t position, const uint8_t* m, size_t len) {
          if (len >= itch::kHeaderLength) extent.stamp(itch::header_timestamp(m));
          on_message(position, m, len);
        });

    const FramerCounters& fc = framer.counters();
    const SequenceCounters& sc = framer.sequence().counters();
    const CaptureStats& cs = reader.stats();
    const uint64_t rejected = decode.rejected() + fc.rejected() + cs.bad_frames;
    if (list) {
      std::fputs(listing.c_str(), stdout);
      if (!clean) std::fprintf(stderr, "itch-inspect: %s\n", reader.error().c_str());
    } else if (args.flag_set("json")) {
      JsonWriter j;
      j.begin_object();
      j.field("capture", reader.path()).field("kind", to_string(reader.kind()));
      j.field("complete", clean).field("error", reader.error());
      j.field("messages", decode.messages()).field("rejected", rejected);
      j.field("first_sequence", extent.first_seq).field("last_sequence", extent.last_seq);
      j.field("first_timestamp_ns", extent.first_ts).field("last_timestamp_ns", extent.last_ts);
      j.field("max_timestamp_ns", extent.max_ts);
      write_decode_json(j, decode);
      write_mold_json(j, framer.counters());
      write_sequence_json(j, framer.sequence().counters());
      write_capture_json(j, cs, reader.feed());
      write_flows_json(j, flows);
      j.end_object();
      std::fputs(j.str().c_str(), stdout);
    } else {
      std::printf("%s (%s)\n", reader.path().c_str(), to_string(reader.kind()));
      if (reader.kind() == CaptureKind::kPcap) {
        std::printf("  %llu records; feed %s: %llu UDP datagrams, %llu MoldUDP64 packets "
                    "(%llu heartbeats, %llu end-of-session)\n",
                    (unsigned long long)cs.records, feed ? to_string(*feed).c_str() : "none",
                    (unsigned long long)cs.udp_datagrams, (unsigned long long)fc.packets,
                    (unsigned long long)fc.heartbeats, (unsigned long long)fc.end_of_session);
        std::printf("  not the feed: %llu other flows, %llu not UDP, %llu not IPv4, %llu fragments\n",
                    (unsigned long long)cs.other_flow, (unsigned long long)cs.not_udp,
                    (unsigned long long)cs.not_ipv4, (unsigned long long)cs.fragments);
        for (const FlowCount& f : flows) {
          std::string sessions;
          for (const mold::Session& s : f.sessions) sessions += " '" + session_text(s) + "'";
          std::printf("  flow %-21s %10llu datagrams %12llu MoldUDP64 messages%s%s\n",
                      to_string(f.destination).c_str(), (unsigned long long)f.datagrams,
                      (unsigned long long)f.mold_messages, sessions.c_str(),
                      feed && f.destination == *feed ? "  <- feed" : "");
        }
      }
      std::printf("  %llu messages decoded, sequence %llu..%llu\n", (unsigned long long)decode.messages(),
                  (unsigned long long)extent.first_seq, (unsigned long long)extent.last_seq);
      std::printf("  %-4s %-28s %12s\n", "type", "name", "count");
      for (const auto& t : itch::kTypes)
        std::printf("  %-4c %-28s %12llu\n", t.type, t.name,
                    (unsigned long long)decode.per_type[itch::type_index(t.type)]);
      std::printf("  rejected: %llu (unknown type %llu, wrong length %llu, bad MoldUDP64 %llu, "
                  "bad frames %llu)\n",
                  (unsigned long long)rejected, (unsigned long long)decode.unknown_type,
                  (unsigned long long)decode.wrong_length, (unsigned long long)fc.rejected(),
                  (unsigned long long)cs.bad_frames);
      std::printf("  sequence: %llu gaps (%llu messages), %llu duplicates, %llu reordered\n",
                  (unsigned long long)sc.gap_events, (unsigned long long)sc.gap_messages,
                  (unsigned long long)sc.duplicate_messages, (unsigned long long)sc.reordered_messages);
      if (!clean) std::printf("  ERROR: %s\n", reader.error().c_str());
    }
    return clean && rejected == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "itch-inspect: %s\n", e.what());
    return 2;
  }
}
