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
#include "source/compressed_file.hpp"
#include "net/udp_frame.hpp"
#include "protocol/itch_file.hpp"

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
  uint64_t udp_datagrams = 0;    // handed on
  uint64_t other_port = 0;       // UDP to another port (with a port filter)
  uint64_t not_udp = 0;          // non-IPv4 / non-UDP frames, skipped
  uint64_t bad_frames = 0;       // truncated or malformed IP/UDP, skipped; by reason:
  uint64_t truncated_frames = 0;  //   captured short (a small snaplen) or frame short
  uint64_t fragments = 0;         //   IPv4 fragments (no reassembly)
  uint64_t malformed_frames = 0;  //   impossible IPv4 header or UDP length
  uint64_t itch_messages = 0;    // binary ITCH file: messages handed on
  int linktype = -1;             // pcap link type (DLT_*), -1 for a binary ITCH file
};

class CaptureReader {
 public:
  // Throws CaptureError. A port filter keeps only datagrams to that port.
  explicit CaptureReader(const std::string& path, std::optional<uint16_t> port = std::nullopt,
                         bool itch_expected = false);

  CaptureKind kind() const { return format_.kind; }
  Compression compression() const { return format_.compression; }

  // Reads everything. pcap: on_datagram(capture_ns, payload, len) per UDP
  // datagram. ITCH file: on_message(position, bytes, len) per message, the
  // 1-based position serving as sequence number. Returns false when the
  // capture ends in an error (see error()); what came before was delivered.
  template <class OnDatagram, class OnMessage>
  bool run(OnDatagram&& on_datagram, OnMessage&& on_message);

  const CaptureStats& stats() const { return stats_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<net::PcapReader> open_pcap() const;

  std::string path_;
  CaptureFormat format_;
  std::optional<uint16_t> port_;
  CaptureStats stats_;
  std::string error_;
};

template <class OnDatagram, class OnMessage>
bool CaptureReader::run(OnDatagram&& on_datagram, OnMessage&& on_message) {
  if (format_.kind == CaptureKind::kItchFile) {
    itch::FileError ferr;
    auto count = [&](uint64_t position, const uint8_t* msg, size_t len) {
      ++stats_.itch_messages;
      on_message(position, msg, len);
    };
    bool ok;
    if (format_.compression == Compression::kNone) {
      itch::ItchFile file(path_);
      ok = itch::walk_length_prefixed(file.data(), file.size(), count, &ferr);
    } else {
      std::unique_ptr<FILE, int (*)(FILE*)> in(open_decompressed(path_, format_.compression), &std::fclose);
      ok = itch::walk_length_prefixed_stream(in.get(), count, &ferr);
    }
    if (!ok)
      error_ = path_ + ": offset " + std::to_string(ferr.offset) + " (message " +
               std::to_string(ferr.message) + "): " + ferr.reason;
    return ok;
  }
  const std::unique_ptr<net::PcapReader> pcap = open_pcap();
  net::PcapReader& reader = *pcap;
  const int linktype = reader.linktype();
  stats_.linktype = linktype;
  net::PcapRecord rec;
  for (;;) {
    const net::PcapReader::Next n = reader.next(rec);
    if (n == net::PcapReader::Next::kEnd) return true;
    if (n == net::PcapReader::Next::kError) {
      error_ = path_ + ": " + reader.error();
      return false;
    }
    ++stats_.records;
    net::UdpDatagram dg;
    const net::FrameStatus st = net::extract_udp(linktype, rec.data, rec.caplen, dg);
    if (st == net::FrameStatus::kNotIpv4 || st == net::FrameStatus::kNotUdp) {
      ++stats_.not_udp;
      continue;
    }
    if (st != net::FrameStatus::kOk) {
      ++stats_.bad_frames;
      ++(st == net::FrameStatus::kTruncated  ? stats_.truncated_frames
         : st == net::FrameStatus::kFragment ? stats_.fragments
                                             : stats_.malformed_frames);
      continue;
    }
    if (port_ && dg.dst_port != *port_) {
      ++stats_.other_port;
      continue;
    }
    ++stats_.udp_datagrams;
    on_datagram(rec.timestamp_ns, dg.payload, dg.length);
  }
}

}  // namespace itchbench
