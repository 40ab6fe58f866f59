#include "net/pcap_io.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "util/atomic_file.hpp"
#include "util/stream_prefetch.hpp"

namespace itchbench::net {

namespace {
constexpr uint32_t kMicrosecondMagic = 0xa1b2c3d4u, kNanosecondMagic = 0xa1b23c4du;
}  // namespace

PcapReader::PcapReader(const std::string& path) {
  try {
    map_ = std::make_unique<MappedFile>(path);
  } catch (const std::runtime_error&) {
    // not mappable (a pipe, say): read as a stream; an unreadable file is named below
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": not a readable capture: " + std::strerror(errno));
  if (map_ && !set_up_in_place_walk(*map_)) map_.reset();
  // A capture libpcap reads whole gets a large buffer: with stdio's default it is a read(2) every 4 KiB.
  if (!map_) {
    buffer_.reset(new char[kReadBufferBytes]);
    std::setvbuf(f, buffer_.get(), _IOFBF, kReadBufferBytes);
  }
  adopt(f, path);  // libpcap checks the file header either way
  if (map_) {
    // libpcap refuses a record over the link type's maximum (262144 bytes for all but a few) and salvages one
    // over the file's snaplen (which it has replaced if impossible): both stay with it.
    const int snaplen = pcap_snapshot(handle_);
    max_caplen_ = snaplen > 0 ? std::min(uint32_t(snaplen), kMaxOrdinaryCaplen) : 0;
  }
}

PcapReader::PcapReader(FILE* stream, const std::string& name) { adopt(stream, name); }

void PcapReader::adopt(FILE* stream, const std::string& name) {
  char err[PCAP_ERRBUF_SIZE] = {0};
  handle_ = pcap_fopen_offline_with_tstamp_precision(stream, PCAP_TSTAMP_PRECISION_NANO, err);
  if (!handle_) {
    std::fclose(stream);
    throw std::runtime_error(name + ": not a readable capture: " + err);
  }
  linktype_ = pcap_datalink(handle_);
}

bool PcapReader::set_up_in_place_walk(const MappedFile& file) {
  if (file.size() < kFileHeaderBytes) return false;
  uint32_t magic;
  std::memcpy(&magic, file.data(), 4);
  swapped_ = magic == __builtin_bswap32(kMicrosecondMagic) || magic == __builtin_bswap32(kNanosecondMagic);
  magic = field(file.data());
  if (magic != kMicrosecondMagic && magic != kNanosecondMagic) return false;
  fraction_to_ns_ = magic == kNanosecondMagic ? 1 : 1000;
  uint16_t version[2];
  std::memcpy(version, file.data() + 4, 4);
  const auto in_order = [&](uint16_t v) { return swapped_ ? __builtin_bswap16(v) : v; };
  if (in_order(version[0]) != 2 || in_order(version[1]) != 4) return false;
  // libpcap rewrites some link types' records as it hands them out (their pseudo-headers' fields in the
  // writer's byte order; a USB length), which a read-only mapping cannot: those stay with it. Of the link
  // types a feed can be read from, Linux cooked headers are rewritten in a swapped file (a CAN frame's id).
  const uint32_t linktype = field(file.data() + 20);  // LINKTYPE_ values, no FCS bits
  switch (linktype) {
    case 1:    // Ethernet
    case 101:  // raw IP
    case 228:  // IPv4
      return true;
    case 113:  // Linux cooked v1
    case 276:  // Linux cooked v2
      return !swapped_;
    default:
      return false;
  }
}

bool PcapReader::hand_over_to_libpcap() {
  map_.reset();
  if (std::fseek(pcap_file(handle_), long(offset_), SEEK_SET) == 0) return true;
  error_ = "record " + std::to_string(records_ + 1) + ": cannot seek to it: " + std::strerror(errno);
  return false;
}

PcapReader::~PcapReader() {
  if (handle_) pcap_close(handle_);
}

PcapReader::Next PcapReader::next(PcapRecord& rec) {
  if (map_) {
    const size_t left = map_->size() - offset_;
    if (left == 0) return Next::kEnd;
    if (left >= kRecordHeaderBytes) {
      const uint8_t* h = map_->data() + offset_;
      const uint32_t caplen = field(h + 8);
      if (caplen <= max_caplen_ && left - kRecordHeaderBytes >= caplen) {
        map_->advance_to(h);  // the record before this one is done with
        prefetch_stream_span(h, kRecordHeaderBytes + caplen, left);
        rec.timestamp_ns = uint64_t(stamp_field(h)) * 1000000000ull + uint64_t(stamp_field(h + 4) * fraction_to_ns_);
        rec.data = h + kRecordHeaderBytes;
        rec.caplen = caplen;
        rec.wirelen = field(h + 12);
        offset_ += kRecordHeaderBytes + caplen;
        ++records_;
        return Next::kRecord;
      }
    }
    if (!hand_over_to_libpcap()) return Next::kError;
  }
  return next_through_libpcap(rec);
}

PcapReader::Next PcapReader::next_through_libpcap(PcapRecord& rec) {
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(handle_, &hdr, &data);
  if (rc == 1) {
    // With nanosecond precision requested, tv_usec carries nanoseconds.
    rec.timestamp_ns = uint64_t(hdr->ts.tv_sec) * 1000000000ull + uint64_t(hdr->ts.tv_usec);
    rec.data = data;
    rec.caplen = hdr->caplen;
    rec.wirelen = hdr->len;
    ++records_;
    return Next::kRecord;
  }
  if (rc == PCAP_ERROR_BREAK) return Next::kEnd;
  error_ = "record " + std::to_string(records_ + 1) + ": " + pcap_geterr(handle_);
  return Next::kError;
}

PcapWriter::PcapWriter(const std::string& path, int linktype, int snaplen)
    : path_(path), tmp_path_(temporary_path(path)) {
  require_regular_output(path);
  dead_ = pcap_open_dead_with_tstamp_precision(linktype, snaplen, PCAP_TSTAMP_PRECISION_NANO);
  if (!dead_) throw std::runtime_error("pcap_open_dead failed");
  try {
    file_ = open_temporary(tmp_path_, path_);
  } catch (...) {
    pcap_close(dead_);
    throw;
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  dumper_ = pcap_dump_fopen(dead_, file_);
  if (!dumper_) {
    const std::string why = pcap_geterr(dead_);  // the handle's own buffer: read before it is closed
    std::fclose(file_);
    std::remove(tmp_path_.c_str());
    pcap_close(dead_);
    throw std::runtime_error(path_ + ": " + why);
  }
}

PcapWriter::~PcapWriter() {
  if (committed_) return;
  if (dumper_) pcap_dump_close(dumper_);  // closes file_
  if (dead_) pcap_close(dead_);
  std::remove(tmp_path_.c_str());
}

void PcapWriter::write(uint64_t timestamp_ns, const uint8_t* frame, size_t len, size_t wire_len) {
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = time_t(timestamp_ns / 1000000000ull);
  hdr.ts.tv_usec = suseconds_t(timestamp_ns % 1000000000ull);
  hdr.caplen = bpf_u_int32(len);
  hdr.len = bpf_u_int32(wire_len ? wire_len : len);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame);
}

void PcapWriter::commit() {
  const bool flushed = pcap_dump_flush(dumper_) == 0 && !std::ferror(file_);
  pcap_dump_close(dumper_);
  dumper_ = nullptr;
  pcap_close(dead_);
  dead_ = nullptr;
  committed_ = true;  // the temporary file is renamed or removed below, either way
  commit_temporary(tmp_path_, path_, flushed);
}

}  // namespace itchbench::net
