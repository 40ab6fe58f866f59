// pcap capture files: read in place or through libpcap, written through
// libpcap; nanosecond timestamps throughout.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "util/mapped_file.hpp"

struct pcap;
struct pcap_dumper;

namespace itchbench::net {

struct PcapRecord {
  uint64_t timestamp_ns = 0;  // since the Unix epoch
  const uint8_t* data = nullptr;
  size_t caplen = 0;          // bytes present in the file
  size_t wirelen = 0;         // bytes on the wire
};

// Reads pcap and pcapng files. A classic pcap file (version 2.4, either byte
// order, micro- or nanosecond stamps) is mapped and its records are handed
// out in place: through libpcap each record is two freads, copied out of a
// stdio buffer under the stream's lock, which was most of a pcap
// simulation's reading. Everything else goes through libpcap: streams,
// pcapng, other versions, link types whose records libpcap rewrites (USB,
// NFLOG, a swapped file's Linux cooked headers), and, from that record on,
// any record the in-place walk does not take as ordinary (a header or body
// cut short, a capture length over the snaplen), so that what comes out,
// errors and salvage included, is libpcap's own.
class PcapReader {
 public:
  // Throws std::runtime_error with libpcap's explanation (bad magic,
  // unreadable file, ...).
  explicit PcapReader(const std::string& path);
  // From an open stream (e.g. fmemopen for fuzzing), through libpcap
  // throughout; takes ownership of it.
  PcapReader(FILE* stream, const std::string& name);
  ~PcapReader();
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  enum class Next { kRecord, kEnd, kError };
  // kError leaves the explanation in error(); records before it were valid.
  // rec.data stays valid until the next call.
  // Not inlined into readers: `itchbench compare` and `bisect` count its instructions by name (callgrind).
  __attribute__((noinline)) Next next(PcapRecord& rec);
  int linktype() const { return linktype_; }
  const std::string& error() const { return error_; }
  // Whether records are still handed out from the mapping (not through libpcap).
  bool in_place() const { return bool(map_); }

 private:
  static constexpr size_t kReadBufferBytes = size_t(1) << 20;
  static constexpr size_t kFileHeaderBytes = 24;
  static constexpr size_t kRecordHeaderBytes = 16;
  void adopt(FILE* stream, const std::string& name);  // opens the capture on stream, owning it
  // libpcap's usual maximum record (MAXIMUM_SNAPLEN); only a few link types allow more.
  static constexpr uint32_t kMaxOrdinaryCaplen = 262144;
  // If the file is a pcap of version 2.4 (either byte order and precision)
  // whose records libpcap hands out as they are, sets up the in-place walk's
  // byte order and scale; false if it is not.
  bool set_up_in_place_walk(const MappedFile& file);
  bool hand_over_to_libpcap();  // libpcap reads on from the record at offset_; false: error_ says why
  Next next_through_libpcap(PcapRecord& rec);
  uint32_t field(const uint8_t* p) const {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped_ ? __builtin_bswap32(v) : v;
  }
  // A stamp's seconds or fraction as libpcap (1.10) hands it out: signed in a
  // file of our byte order, unsigned in a swapped one (its byte swap widens).
  int64_t stamp_field(const uint8_t* p) const {
    return swapped_ ? int64_t(field(p)) : int64_t(int32_t(field(p)));
  }

  std::unique_ptr<MappedFile> map_;  // while records are handed out in place
  size_t offset_ = kFileHeaderBytes;  // of the next record in the mapping
  uint32_t max_caplen_ = 0;           // longer records go to libpcap (its checks)
  int64_t fraction_to_ns_ = 1;        // 1000 for microsecond stamps
  bool swapped_ = false;              // the file's byte order is not ours
  std::unique_ptr<char[]> buffer_;  // the stream's stdio buffer, freed after ~PcapReader closes the stream
  pcap* handle_ = nullptr;
  int linktype_ = 0;
  uint64_t records_ = 0;
  std::string error_;
};

// Writes a nanosecond pcap to PATH.PID.tmp and renames it to PATH on commit(),
// so a crashed or failed writer never leaves a partial file under the final
// name. Destroyed without commit(), it removes the temporary file.
class PcapWriter {
 public:
  PcapWriter(const std::string& path, int linktype, int snaplen = 65535);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // wire_len: the frame's length on the wire when only its first len bytes
  // were captured (a snaplen); 0 means the whole frame is here.
  void write(uint64_t timestamp_ns, const uint8_t* frame, size_t len, size_t wire_len = 0);
  void commit();  // flush, close, rename; throws on I/O error

 private:
  std::string path_;
  std::string tmp_path_;
  pcap* dead_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace itchbench::net
