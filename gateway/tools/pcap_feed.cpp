// pcap-feed: writes a capture's feed — its frames, byte for byte, with their
// timestamps — to a new pcap, leaving out everything else (other flows, ARP,
// routing protocols, fragments, damaged frames). A replay of the result sends
// only the feed, so what arrives can be balanced against what was sent.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "net/pcap_io.hpp"
#include "pipeline/counters_json.hpp"
#include "source/capture_file.hpp"
#include "source/feed_option.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"

using namespace itchbench;

int main(int argc, char** argv) {
  cli::Args args("pcap-feed", "pcap-feed CAPTURE --out FILE [--feed ADDR:PORT]",
                 "Copy the feed's frames of a pcap/pcapng (plain or compressed) to a new pcap with\n"
                 "the same link type (or, with --plain-ethernet, as untagged Ethernet II frames:\n"
                 "no VLAN or QinQ tags, no cooked headers); print the feed and the counts as JSON.\n"
                 "Exit status: 0 done,\n"
                 "1 the capture ended in an error (nothing written), 2 usage or no single feed.");
  args.positional("CAPTURE", "capture file");
  args.option("out", "FILE", "the pcap to write (written whole or not at all)");
  args.option("feed", "ADDR:PORT", kFeedOptionHelp);
  args.flag("plain-ethernet", "write each frame as Ethernet II (zero MACs) around its IPv4 datagram");
  args.parse(argc, argv);
  const bool plain = args.flag_set("plain-ethernet");
  if (!args.has("out")) args.fail("--out is required");
  args.refuse_overwriting(args.positionals()[0], args.get("out"));
  const std::optional<Feed> requested = feed_option(args);
  try {
    CaptureReader reader(args.positionals()[0], requested);
    if (reader.kind() != CaptureKind::kPcap)
      throw CaptureError(reader.path() + ": a binary ITCH file has no frames (make a pcap with itch2pcap)");
    reader.select_feed();
    std::unique_ptr<net::PcapWriter> out;
    const auto open = [&] {
      out = std::make_unique<net::PcapWriter>(args.get("out"), plain ? net::kLinkEthernet : reader.stats().linktype);
    };
    std::vector<uint8_t> frame;
    const bool complete = reader.run_frames([&](const net::PcapRecord& rec, const net::UdpDatagram& dg) {
      if (!out) open();
      if (!plain) {
        out->write(rec.timestamp_ns, rec.data, rec.caplen, rec.wirelen);
        return;
      }
      const size_t link = size_t(dg.ip_header - rec.data);
      frame.assign(14, 0);
      frame[12] = 0x08;  // ethertype IPv4
      frame.insert(frame.end(), dg.ip_header, rec.data + rec.caplen);
      out->write(rec.timestamp_ns, frame.data(), frame.size(), rec.wirelen - link + 14);
    });
    if (!complete) {
      std::fprintf(stderr, "pcap-feed: %s\n", reader.error().c_str());
      return 1;  // the writer, never committed, leaves no file
    }
    if (!out) open();
    out->commit();
    JsonWriter j;
    j.begin_object();
    j.field("capture", reader.path()).field("out", args.get("out"));
    write_capture_json(j, reader.stats(), reader.feed());
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pcap-feed: %s\n", e.what());
    return 2;
  }
}
