#include "publish/subscriber_output.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "util/atomic_file.hpp"

namespace itchbench {

std::string with_suffix(const std::string& path, const char* suffix) {
  const size_t slash = path.rfind('/'), dot = path.rfind('.');
  const bool has = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has ? path.substr(0, dot) : path) + suffix;
}

SubscriberOutput::SubscriberOutput(const std::string& out)
    : info_path_(with_suffix(out, ".json")),
      frames_(std::fopen(out.c_str(), "wb")),
      receipts_(with_suffix(out, ".recv"), logfmt::Kind::kSubscriber,
                LogIdentity{logfmt::StageClock::kMonotonic, logfmt::OriginClock::kNone, "", ""}, size_t(1) << 30) {
  if (!frames_) throw std::runtime_error(out + ": " + std::strerror(errno));
}

SubscriberOutput::~SubscriberOutput() { close(); }

void SubscriberOutput::on_event(const logfmt::BboRecord& r, uint64_t t_received) {
  std::fwrite(&r, sizeof r, 1, frames_);
  logfmt::SubscriberRecord& s = receipts_.claim();
  s.seq = r.seq;
  s.t_received = t_received;
  s.stock_locate = r.stock_locate;
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

}  // namespace itchbench
