// Reads a capture from disk as the gateway's in-process source: a pcap /
// pcapng of MoldUDP64 over UDP, or a NASDAQ binary ITCH 5.0 file, each plain
// or compressed (gzip, zstd: read as a stream). The kind and the compression
// are told by content, not by file name. No pacing and no sockets: time is
// the capture's own.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "source/compressed_file.hpp"
#include "source/feed.hpp"
#include "protocol/itch_file.hpp"
#include "util/mapped_file.hpp"

namespace itchbench {

enum class CaptureKind { kPcap, kItchFile };
const char* to_string(CaptureKind k);

// Missing file, empty file, not a capture, unsupported link type.
struct CaptureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CaptureFormat {
  CaptureKind kind;
  Compression compression;
};

// Throws CaptureError with a message fit for a user. A caller that knows the
// file must be a binary ITCH file (itch2pcap) says so with itch_expected: a
// damaged one is then read, and its first bad message named, instead of the
// whole file being refused as "not a capture".
CaptureFormat detect_capture(const std::string& path, bool itch_expected = false);

struct CaptureStats {
  uint64_t records = 0;          // pcap records read
  uint64_t udp_datagrams = 0;    // the feed's datagrams, handed on
  // Not the feed, skipped and counted by kind:
  uint64_t other_flow = 0;       //   UDP to another address or port
  uint64_t not_udp = 0;          //   IPv4, another protocol
  uint64_t not_ipv4 = 0;         //   another ethertype (ARP, IPv6, ...)
  uint64_t fragments = 0;        //   IPv4 fragments (no reassembly; a lost feed datagram shows as a gap)
  uint64_t bad_frames = 0;       // truncated or malformed IP/UDP, skipped; by reason:
  uint64_t truncated_frames = 0;  //   captured short (a small snaplen) or frame short
  uint64_t malformed_frames = 0;  //   impossible IPv4 header or UDP length
  uint64_t itch_messages = 0;    // binary ITCH file: messages handed on
  int linktype = -1;             // pcap link type (DLT_*), -1 for a binary ITCH file
};

class CaptureReader {
 public:
  // Throws CaptureError. A pcap's feed is `feed`, or else chosen by a census
  // pass over the capture (choose_feed) when run() or select_feed() is first
  // called; a binary ITCH file has no flows, and a feed given for one is an error.
  explicit CaptureReader(const std::string& path, std::optional<Feed> feed = std::nullopt,
                         bool itch_expected = false);

  CaptureKind kind() const { return format_.kind; }
  Compression compression() const { return format_.compression; }

  // Reads everything. pcap: on_datagram(capture_ns, payload, len) per UDP
  // datagram. ITCH file: on_message(position, bytes, len) per message, the
  // 1-based position serving as sequence number. Returns false when the
  // capture ends in an error (see error()); what came before was delivered.
  template <class OnDatagram, class OnMessage>
  bool run(OnDatagram&& on_datagram, OnMessage&& on_message) {
    return run(on_datagram, on_message, [](const uint8_t*, size_t) {});
  }
  // The same, and an ITCH file is read ahead: look_ahead(bytes, len) sees
  // each message kLookAheadMessages before on_message does (a compressed one
  // within each megabyte it is read by; a datagram is whole already: its
  // receiver looks over it first).
  template <class OnDatagram, class OnMessage, class LookAhead>
  bool run(OnDatagram&& on_datagram, OnMessage&& on_message, LookAhead&& look_ahead);
  // Far enough for a prefetched cache line to arrive, near enough to be still
  // there: 8, 16 and 32 measured the same (1.4x on a deep book, the whole
  // gateway), each well above none.
  static constexpr int kLookAheadMessages = 8;
  // pcap only: on_frame(record, datagram) for every frame of the feed, whole (link header and all).
  template <class OnFrame>
  bool run_frames(OnFrame&& on_frame);

  // Every UDP flow of a pcap (a pass over it): what a feed is chosen from.
  std::vector<FlowCount> census() const;
  // Takes the census and chooses the feed now if none was given, or, with
  // check_given, checks a given one against it (choose_feed); throws
  // CaptureError when the capture holds two sessions or lacks the feed.
  // run() calls it; callers may call it first. Returns the census taken
  // (empty when none was needed).
  const std::vector<FlowCount>& select_feed(bool check_given = false);
  const std::optional<Feed>& feed() const { return feed_; }

  const CaptureStats& stats() const { return stats_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<net::PcapReader> open_pcap() const;
  // Calls on_udp(record, datagram) for every UDP datagram, counting the rest
  // into stats; false on a read error (in error_).
  template <class OnUdp>
  bool for_each_udp(CaptureStats& stats, std::string& error, OnUdp&& on_udp) const;
  // on_feed(record, datagram) for the feed's datagrams, the rest counted as not the feed.
  template <class OnFeed>
  bool for_each_feed_datagram(OnFeed&& on_feed);

  std::string path_;
  CaptureFormat format_;
  std::optional<Feed> feed_;
  bool feed_selected_ = false;
  std::vector<FlowCount> flows_;  // the census select_feed took
  CaptureStats stats_;
  std::string error_;
};

template <class OnDatagram, class OnMessage, class LookAhead>
bool CaptureReader::run(OnDatagram&& on_datagram, OnMessage&& on_message, LookAhead&& look_ahead) {
  if (format_.kind == CaptureKind::kItchFile) {
    itch::FileError ferr;
    auto count = [&](uint64_t position, const uint8_t* msg, size_t len) {
      ++stats_.itch_messages;
      on_message(position, msg, len);
    };
    bool ok;
    if (format_.compression == Compression::kNone) {
      MappedFile file(path_);
      ok = itch::walk_length_prefixed(
          file.data(), file.size(),
          [&](uint64_t position, const uint8_t* msg, size_t len) {
            count(position, msg, len);
            file.advance_to(msg);
          },
          &ferr, look_ahead, kLookAheadMessages);
    } else {
      std::unique_ptr<FILE, int (*)(FILE*)> in(open_decompressed(path_, format_.compression), &std::fclose);
      ok = itch::walk_length_prefixed_stream(in.get(), count, &ferr, look_ahead, kLookAheadMessages);
    }
    if (!ok)
      error_ = path_ + ": offset " + std::to_string(ferr.offset) + " (message " +
               std::to_string(ferr.message) + "): " + ferr.reason;
    return ok;
  }
  return for_each_feed_datagram([&](const net::PcapRecord& rec, const net::UdpDatagram& dg) {
    on_datagram(rec.timestamp_ns, dg.payload, dg.length);
  });
}

template <class OnFrame>
bool CaptureReader::run_frames(OnFrame&& on_frame) {
  return for_each_feed_datagram(on_frame);
}

template <class OnFeed>
bool CaptureReader::for_each_feed_datagram(OnFeed&& on_feed) {
  select_feed();
  const bool ok = for_each_udp(stats_, error_, [&](const net::PcapRecord& rec, const net::UdpDatagram& dg) {
    if (!feed_ || dg.dst_ip != feed_->address || dg.dst_port != feed_->port) {
      ++stats_.other_flow;
      return;
    }
    ++stats_.udp_datagrams;
    on_feed(rec, dg);
  });
  if (ok && feed_ && stats_.udp_datagrams == 0 && stats_.other_flow > 0) {
    error_ = path_ + ": no UDP datagram to the feed " + to_string(*feed_) + " (" +
             std::to_string(stats_.other_flow) + " to other flows)";
    return false;
  }
  return ok;
}

template <class OnUdp>
bool CaptureReader::for_each_udp(CaptureStats& stats, std::string& error, OnUdp&& on_udp) const {
  const std::unique_ptr<net::PcapReader> pcap = open_pcap();
  net::PcapReader& reader = *pcap;
  const int linktype = reader.linktype();
  stats.linktype = linktype;
  net::PcapRecord rec;
  for (;;) {
    const net::PcapReader::Next n = reader.next(rec);
    if (n == net::PcapReader::Next::kEnd) return true;
    if (n == net::PcapReader::Next::kError) {
      error = path_ + ": " + reader.error();
      return false;
    }
    ++stats.records;
    net::UdpDatagram dg;
    switch (net::extract_udp(linktype, rec.data, rec.caplen, dg)) {
      case net::FrameStatus::kOk: on_udp(rec, dg); break;
      case net::FrameStatus::kNotIpv4: ++stats.not_ipv4; break;
      case net::FrameStatus::kNotUdp: ++stats.not_udp; break;
      case net::FrameStatus::kFragment: ++stats.fragments; break;
      case net::FrameStatus::kTruncated:
        ++stats.bad_frames;
        ++stats.truncated_frames;
        break;
      case net::FrameStatus::kBadIpHeader:
      case net::FrameStatus::kBadUdpLength:
        ++stats.bad_frames;
        ++stats.malformed_frames;
        break;
    }
  }
}

}  // namespace itchbench
