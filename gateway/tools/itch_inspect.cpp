// itch-inspect: frames and decodes a capture (pcap or binary ITCH file) and
// prints what it holds: per-type message counts, MoldUDP64 framing and
// sequence accounting, and every rejection by reason.
#include <cstdio>
#include <string>

#include "pipeline/mold_framer.hpp"
#include "protocol/itch.hpp"
#include "source/capture_file.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"

using namespace itchbench;

namespace {

struct DecodeCounts {
  uint64_t per_type[itch::kTypeCount] = {};
  uint64_t unknown_type = 0;
  uint64_t wrong_length = 0;
  uint64_t empty = 0;
  uint64_t first_seq = 0, last_seq = 0;
  uint64_t first_ts = 0, last_ts = 0;  // capture time, ns since epoch (pcap only)

  void on_message(uint64_t seq, const uint8_t* p, size_t len) {
    const itch::DecodeStatus st = itch::decode(p, len, [&](auto view) {
      ++per_type[itch::type_index(decltype(view)::kType)];
    });
    if (st == itch::DecodeStatus::kUnknownType) ++unknown_type;
    if (st == itch::DecodeStatus::kWrongLength) ++wrong_length;
    if (st == itch::DecodeStatus::kEmpty) ++empty;
    if (first_seq == 0) first_seq = seq;
    last_seq = seq;
  }
  uint64_t decoded() const {
    uint64_t n = 0;
    for (uint64_t c : per_type) n += c;
    return n;
  }
};

}  // namespace

int main(int argc, char** argv) {
  cli::Args args("itch-inspect", "itch-inspect [options] CAPTURE",
                 "Frame and decode an ITCH 5.0 capture (pcap/pcapng of MoldUDP64 over UDP, or a\n"
                 "NASDAQ binary ITCH file) and report per-type counts, framing and sequence\n"
                 "accounting, and rejections. Exit status: 0 clean, 1 the capture has errors or\n"
                 "rejections, 2 usage or unreadable input.");
  args.positional("CAPTURE", "capture file");
  args.option("port", "PORT", "only UDP datagrams to this destination port");
  args.flag("json", "print one JSON object instead of a table");
  args.flag("list", "print one line per message: sequence and type, nothing else");
  args.parse(argc, argv);

  std::optional<uint16_t> port;
  if (args.has("port")) port = uint16_t(args.get_u64("port"));
  try {
    CaptureReader reader(args.positionals()[0], port);
    MoldFramer framer;
    DecodeCounts counts;
    const bool list = args.flag_set("list");
    std::string listing;
    auto on_message = [&](uint64_t seq, const uint8_t* m, size_t len) {
      counts.on_message(seq, m, len);
      if (list) listing += std::to_string(seq) + " " + (len ? std::string(1, char(m[0])) : "-") + "\n";
    };
    const bool clean = reader.run(
        [&](uint64_t ts, const uint8_t* p, size_t n) {
          if (counts.first_ts == 0) counts.first_ts = ts;
          counts.last_ts = ts;
          framer.on_datagram(p, n, on_message);
        },
        on_message);

    const FramerCounters& fc = framer.counters();
    const SequenceCounters& sc = framer.sequence().counters();
    const CaptureStats& cs = reader.stats();
    const uint64_t rejected = counts.unknown_type + counts.wrong_length + counts.empty +
                              fc.rejected() + cs.bad_frames;
    if (list) {
      std::fputs(listing.c_str(), stdout);
      if (!clean) std::fprintf(stderr, "itch-inspect: %s\n", reader.error().c_str());
    } else if (args.flag_set("json")) {
      JsonWriter j;
      j.begin_object();
      j.field("capture", reader.path()).field("kind", to_string(reader.kind()));
      j.field("complete", clean);
      if (!clean) j.field("error", reader.error());
      j.field("messages", counts.decoded());
      j.key("per_type").begin_object();
      for (const auto& t : itch::kTypes)
        j.field(std::string(1, t.type), counts.per_type[itch::type_index(t.type)]);
      j.end_object();
      j.key("rejected").begin_object();
      j.field("unknown_type", counts.unknown_type).field("wrong_length", counts.wrong_length);
      j.field("empty_message", counts.empty);
      j.field("mold_too_short", fc.rejected_too_short)
          .field("mold_length_overrun", fc.rejected_length_overrun)
          .field("mold_count_mismatch", fc.rejected_count_mismatch);
      j.field("bad_frames", cs.bad_frames);
      j.end_object();
      j.key("capture_stats").begin_object();
      j.field("records", cs.records).field("udp_datagrams", cs.udp_datagrams);
      j.field("not_udp", cs.not_udp).field("other_port", cs.other_port);
      j.field("first_timestamp_ns", counts.first_ts).field("last_timestamp_ns", counts.last_ts);
      j.end_object();
      j.key("mold").begin_object();
      j.field("packets", fc.packets).field("heartbeats", fc.heartbeats);
      j.field("end_of_session", fc.end_of_session);
      j.field("first_sequence", counts.first_seq).field("last_sequence", counts.last_seq);
      j.field("gap_events", sc.gap_events).field("gap_messages", sc.gap_messages);
      j.field("duplicate_messages", sc.duplicate_messages)
          .field("reordered_messages", sc.reordered_messages);
      j.end_object();
      j.end_object();
      std::fputs(j.str().c_str(), stdout);
    } else {
      std::printf("%s (%s)\n", reader.path().c_str(), to_string(reader.kind()));
      if (reader.kind() == CaptureKind::kPcap)
        std::printf("  %llu records, %llu UDP datagrams, %llu MoldUDP64 packets "
                    "(%llu heartbeats, %llu end-of-session)\n",
                    (unsigned long long)cs.records, (unsigned long long)cs.udp_datagrams,
                    (unsigned long long)fc.packets, (unsigned long long)fc.heartbeats,
                    (unsigned long long)fc.end_of_session);
      std::printf("  %llu messages decoded, sequence %llu..%llu\n",
                  (unsigned long long)counts.decoded(), (unsigned long long)counts.first_seq,
                  (unsigned long long)counts.last_seq);
      std::printf("  %-4s %-28s %12s\n", "type", "name", "count");
      for (const auto& t : itch::kTypes)
        std::printf("  %-4c %-28s %12llu\n", t.type, t.name,
                    (unsigned long long)counts.per_type[itch::type_index(t.type)]);
      std::printf("  rejected: %llu (unknown type %llu, wrong length %llu, bad MoldUDP64 %llu, "
                  "bad frames %llu)\n",
                  (unsigned long long)rejected, (unsigned long long)counts.unknown_type,
                  (unsigned long long)counts.wrong_length, (unsigned long long)fc.rejected(),
                  (unsigned long long)cs.bad_frames);
      std::printf("  sequence: %llu gaps (%llu messages), %llu duplicates, %llu reordered\n",
                  (unsigned long long)sc.gap_events, (unsigned long long)sc.gap_messages,
                  (unsigned long long)sc.duplicate_messages,
                  (unsigned long long)sc.reordered_messages);
      if (!clean) std::printf("  ERROR: %s\n", reader.error().c_str());
    }
    return clean && rejected == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "itch-inspect: %s\n", e.what());
    return 2;
  }
}
