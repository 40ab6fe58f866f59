#include "source/capture_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace itchbench {

const char* to_string(CaptureKind k) {
  return k == CaptureKind::kPcap ? "pcap" : "itch";
}

namespace {
bool is_pcap_magic(const uint8_t* m) {
  static const uint8_t magics[][4] = {
      {0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4},  // microsecond, both byte orders
      {0x4d, 0x3c, 0xb2, 0xa1}, {0xa1, 0xb2, 0x3c, 0x4d},  // nanosecond
      {0x34, 0xcd, 0xb2, 0xa1}, {0xa1, 0xb2, 0xcd, 0x34},  // Kuznetzov's modified pcap (libpcap reads it)
      {0x0a, 0x0d, 0x0d, 0x0a},                            // pcapng section header
  };
  for (const auto& magic : magics)
    if (std::memcmp(m, magic, 4) == 0) return true;
  return false;
}
}  // namespace

CaptureFormat detect_capture(const std::string& path, bool itch_expected) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw CaptureError(path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw CaptureError(path + ": is a directory, not a capture");
  // A pipe or a device has no size to go by (/dev/zero's is 0): it would be said to be an empty capture.
  if (!S_ISREG(st.st_mode))
    throw CaptureError(path + ": not a regular file (a pipe or a device): a capture is read more than once, so it "
                       "must be a file; a .gz or .zst file is read as it is");
  if (st.st_size == 0) throw CaptureError(path + ": empty capture (0 bytes)");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw CaptureError(path + ": " + std::strerror(errno));
  uint8_t head[512];
  ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  if (n < 0) throw CaptureError(path + ": " + std::strerror(errno));
  const Compression c = detect_compression(head, size_t(n));
  if (c != Compression::kNone) {  // what is inside decides
    try {
      std::unique_ptr<FILE, int (*)(FILE*)> in(open_decompressed(path, c), &std::fclose);
      n = ssize_t(std::fread(head, 1, sizeof head, in.get()));
      if (n == 0)
        throw CaptureError(path + ": " + to_string(c) + " data that " +
                           (std::ferror(in.get()) ? "cannot be decompressed" : "holds nothing"));
    } catch (const std::runtime_error& e) {
      throw CaptureError(e.what());
    }
  }
  const std::string what = c == Compression::kNone ? "" : std::string(to_string(c)) + "-compressed ";
  if (n >= 4 && is_pcap_magic(head)) return {CaptureKind::kPcap, c};
  if (itch_expected || itch::looks_like_itch_file(head, size_t(n))) return {CaptureKind::kItchFile, c};
  throw CaptureError(path + ": not a capture: " + what +
                     "data that is neither a pcap/pcapng file nor a binary ITCH 5.0 file (length-prefixed messages)");
}

std::unique_ptr<net::PcapReader> CaptureReader::open_pcap() const {
  if (format_.compression == Compression::kNone) return std::make_unique<net::PcapReader>(path_);
  return std::make_unique<net::PcapReader>(open_decompressed(path_, format_.compression), path_);
}

CaptureReader::CaptureReader(const std::string& path, std::optional<Feed> feed, bool itch_expected)
    : path_(path), format_(detect_capture(path, itch_expected)), feed_(feed) {
  if (format_.kind == CaptureKind::kItchFile && feed_)
    throw CaptureError(path_ + ": a binary ITCH file has no UDP flows: a feed (" + to_string(*feed_) +
                       ") applies to pcap captures only");
  if (format_.kind == CaptureKind::kPcap) {
    try {
      const std::unique_ptr<net::PcapReader> probe = open_pcap();
      if (!net::is_supported_linktype(probe->linktype()))
        throw CaptureError(path_ + ": unsupported link type " + std::to_string(probe->linktype()) +
                           " (supported: Ethernet, raw IPv4, Linux cooked v1/v2)");
    } catch (const CaptureError&) {
      throw;
    } catch (const std::exception& e) {
      throw CaptureError(e.what());
    }
  }
}

const std::vector<FlowCount>& CaptureReader::select_feed(bool check_given) {
  if (format_.kind != CaptureKind::kPcap || feed_selected_ || (feed_ && !check_given)) return flows_;
  flows_ = census();
  try {
    feed_ = choose_feed(flows_, feed_);
  } catch (const std::invalid_argument& e) {
    throw CaptureError(path_ + ": " + e.what());
  }
  feed_selected_ = true;
  return flows_;
}

std::vector<FlowCount> CaptureReader::census() const {
  FlowCensus census;
  CaptureStats stats;
  std::string error;
  for_each_udp(stats, error, [&](const net::PcapRecord&, const net::UdpDatagram& dg) {
    census.add(Feed{dg.dst_ip, dg.dst_port}, dg.payload, dg.length);
  });
  return census.flows();  // a read error ends the census where run() will report it
}

}  // namespace itchbench
