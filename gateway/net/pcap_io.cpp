#include "net/pcap_io.hpp"

#include <pcap/pcap.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "util/atomic_file.hpp"

namespace itchbench::net {

PcapReader::PcapReader(const std::string& path) : buffer_(new char[kReadBufferBytes]) {
  // Opened here rather than by pcap_open_offline, which reads through stdio's default buffer: a read(2) every
  // 4 KiB, most of the time a pcap simulation spent outside the gateway.
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": not a readable capture: " + std::strerror(errno));
  std::setvbuf(f, buffer_.get(), _IOFBF, kReadBufferBytes);
  adopt(f, path);
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

PcapReader::~PcapReader() {
  if (handle_) pcap_close(handle_);
}

PcapReader::Next PcapReader::next(PcapRecord& rec) {
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
  dead_ = pcap_open_dead_with_tstamp_precision(linktype, snaplen, PCAP_TSTAMP_PRECISION_NANO);
  if (!dead_) throw std::runtime_error("pcap_open_dead failed");
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (!file_) {
    pcap_close(dead_);
    throw std::runtime_error(tmp_path_ + ": " + std::strerror(errno));
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  dumper_ = pcap_dump_fopen(dead_, file_);
  if (!dumper_) {
    std::fclose(file_);
    pcap_close(dead_);
    throw std::runtime_error(tmp_path_ + ": " + pcap_geterr(dead_));
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
