// pcap capture files through libpcap, nanosecond timestamps throughout.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

struct pcap;
struct pcap_dumper;

namespace itchbench::net {

struct PcapRecord {
  uint64_t timestamp_ns = 0;  // since the Unix epoch
  const uint8_t* data = nullptr;
  size_t caplen = 0;          // bytes present in the file
  size_t wirelen = 0;         // bytes on the wire
};

// Reads pcap and pcapng files. Constructor throws std::runtime_error with
// libpcap's explanation (bad magic, unreadable file, ...).
class PcapReader {
 public:
  explicit PcapReader(const std::string& path);
  // From an open stream (e.g. fmemopen for fuzzing); takes ownership of it.
  PcapReader(FILE* stream, const std::string& name);
  ~PcapReader();
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  enum class Next { kRecord, kEnd, kError };
  // kError leaves the explanation in error(); records before it were valid.
  Next next(PcapRecord& rec);
  int linktype() const { return linktype_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr size_t kReadBufferBytes = size_t(1) << 20;
  void adopt(FILE* stream, const std::string& name);  // opens the capture on stream, owning it

  std::unique_ptr<char[]> buffer_;  // the stream's stdio buffer, freed after ~PcapReader closes the stream
  pcap* handle_ = nullptr;
  int linktype_ = 0;
  uint64_t records_ = 0;
  std::string error_;
};

// Writes a nanosecond pcap to PATH.tmp and renames it to PATH on commit(),
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
