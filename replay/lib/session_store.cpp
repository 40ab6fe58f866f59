#include "replay/lib/session_store.hpp"

#include <cstring>
#include <stdexcept>

#include "protocol/endian.hpp"
#include "source/capture_file.hpp"

namespace itchbench::replay {

void MessageStore::add(const uint8_t* msg, uint16_t len) {
  offsets_.push_back(bytes_.size());
  bytes_.resize(bytes_.size() + 2 + len);
  store_be16(bytes_.data() + offsets_.back(), len);
  if (len) std::memcpy(bytes_.data() + offsets_.back() + 2, msg, len);
}

const uint8_t* MessageStore::message(uint64_t seq, uint16_t& len) const {
  const uint8_t* p = bytes_.data() + offsets_[size_t(seq - first_)];
  len = load_be16(p);
  return p + 2;
}

MessageStore load_session(const std::string& path, const std::optional<Feed>& feed, const std::string& session_name) {
  CaptureReader reader(path, feed);
  std::optional<MessageStore> store;
  uint64_t next = 0;
  std::string problem;
  const bool complete = reader.run(
      [&](uint64_t, const uint8_t* p, size_t n) {
        mold::Packet packet;
        if (!problem.empty() || mold::parse(p, n, packet) != mold::ParseStatus::kOk) return;
        if (packet.kind() != mold::PacketKind::kMessages) return;
        if (!store) {
          mold::Session s;
          std::memcpy(s.data(), p, mold::kSessionLength);
          store.emplace(s, packet.sequence());
          next = packet.sequence();
        }
        packet.for_each_message([&](uint64_t seq, const uint8_t* msg, size_t len) {
          if (seq < next || !problem.empty()) return;
          if (seq > next) {
            problem = "the capture lacks messages " + std::to_string(next) + " to " + std::to_string(seq - 1) +
                      ": a re-request server must hold every message of the session";
            return;
          }
          store->add(msg, uint16_t(len));
          ++next;
        });
      },
      [&](uint64_t, const uint8_t* msg, size_t len) {
        if (!store) store.emplace(mold::make_session(session_name), 1);
        store->add(msg, uint16_t(len));
      });
  if (!complete) throw std::runtime_error(reader.error());
  if (!problem.empty()) throw std::runtime_error(path + ": " + problem);
  if (!store || store->empty()) throw std::runtime_error(path + ": no MoldUDP64 message to hold");
  return std::move(*store);
}

}  // namespace itchbench::replay
