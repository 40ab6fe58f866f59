#include "publish/subscriber_output.hpp"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include "util/atomic_file.hpp"

namespace itchbench {

std::string with_suffix(const std::string& path, const char* suffix) {
  const size_t slash = path.rfind('/'), dot = path.rfind('.');
  const bool has = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has ? path.substr(0, dot) : path) + suffix;
}

SubscriberOutput::SubscriberOutput(const std::string& out, size_t reserve_bytes, bool pooled, uint32_t levels)
    : info_path_(with_suffix(out, ".json")),
      frame_bytes_(levels ? sizeof(logfmt::LevelChangeRecord) : sizeof(logfmt::BboRecord)),
      locate_at_(levels ? offsetof(logfmt::LevelChangeRecord, stock_locate) : offsetof(logfmt::BboRecord, stock_locate)),
      frames_(std::fopen(out.c_str(), "wb")),
      receipts_(with_suffix(out, ".recv"), logfmt::Kind::kSubscriber,
                LogIdentity{logfmt::StageClock::kMonotonic, logfmt::OriginClock::kNone, "", ""}, reserve_bytes,
                sizeof(logfmt::SubscriberRecord), MmapLog::kNoLimit, !pooled) {
  if (!frames_) throw std::runtime_error(out + ": " + std::strerror(errno));
}

SubscriberOutput::~SubscriberOutput() { close(); }

void SubscriberOutput::on_frame(const void* frame, uint64_t t_received) {
  std::fwrite(frame, frame_bytes_, 1, frames_);
  logfmt::SubscriberRecord& s = receipts_.claim();
  std::memcpy(&s.seq, frame, sizeof s.seq);
  s.t_received = t_received;
  std::memcpy(&s.stock_locate, static_cast<const uint8_t*>(frame) + locate_at_, sizeof s.stock_locate);
  SubscriberLog::commit(s, 0);
  ++events_;
}

void SubscriberOutput::close() {
  if (!frames_) return;
  std::fclose(frames_);
  frames_ = nullptr;
  receipts_.close();
}

void SubscriberOutput::write_info_text(const std::string& text) const { write_file_atomically(info_path_, text); }

CollectorOutput::CollectorOutput(const std::string& out, bool records)
    : info_path_(out + ".json"), out_(std::fopen(out.c_str(), "w")), records_(records) {
  if (!out_) throw std::runtime_error(out + ": " + std::strerror(errno));
}

CollectorOutput::~CollectorOutput() { close(); }

void CollectorOutput::on_payload(const void* data, size_t n, uint64_t t) {
  ++reads_;
  bytes_ += n;
  const char* p = static_cast<const char*>(data);
  if (records_) {
    for (size_t at = 0; at + sizeof(logfmt::BboRecord) <= n; at += sizeof(logfmt::BboRecord)) {
      logfmt::BboRecord r;
      std::memcpy(&r, p + at, sizeof r);
      std::fprintf(out_, "%llu %llu,%u,%u,%llu,%u,%llu\n", (unsigned long long)t, (unsigned long long)r.seq,
                   unsigned(r.stock_locate), unsigned(r.bid_px), (unsigned long long)r.bid_qty, unsigned(r.ask_px),
                   (unsigned long long)r.ask_qty);
    }
    return;
  }
  size_t start = 0;
  while (start < n) {
    const void* nl = std::memchr(p + start, '\n', n - start);
    size_t end = nl ? size_t(static_cast<const char*>(nl) - p) : n;
    size_t len = end - start;
    if (len && p[start + len - 1] == '\r') --len;
    std::fprintf(out_, "%llu %.*s\n", (unsigned long long)t, int(len), p + start);
    start = end + 1;
  }
}

void CollectorOutput::close() {
  if (out_) std::fclose(out_);
  out_ = nullptr;
}

void CollectorOutput::write_info(bool subscribed, const std::string& ended, int64_t left_unread) const {
  JsonWriter j;
  j.begin_object();
  j.field("subscribed", subscribed).field("ended", ended).field("reads", reads_).field("bytes", bytes_);
  if (left_unread >= 0) j.field("left_unread", left_unread);
  j.end_object();
  write_file_atomically(info_path_, j.str());
}

}  // namespace itchbench

namespace itchbench {

SubscriberFiles open_subscriber_files(const std::string& out, const std::string& collect_format, uint32_t levels) {
  SubscriberFiles f;
  if (collect_format.empty())
    f.own = std::make_unique<SubscriberOutput>(out, size_t(1) << 30, false, levels);
  else if (collect_format == "csv" || collect_format == "jsonl" || collect_format == "itchbench")
    f.collected = std::make_unique<CollectorOutput>(out, collect_format == "itchbench");
  else
    throw std::invalid_argument("--collect takes csv, jsonl or itchbench, not " + collect_format);
  return f;
}

}  // namespace itchbench
