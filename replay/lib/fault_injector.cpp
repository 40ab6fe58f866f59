#include "replay/lib/fault_injector.hpp"

#include <algorithm>
#include <stdexcept>

#include "net/pcap_io.hpp"
#include "net/udp_frame.hpp"
#include "protocol/endian.hpp"
#include "protocol/moldudp64.hpp"
#include "replay/lib/rng.hpp"
#include "util/json_writer.hpp"

namespace itchbench::replay {
namespace {

enum class Fault : uint8_t { kNone, kDrop, kDuplicate, kReorder, kTruncate, kCorrupt };

struct Item {
  uint64_t timestamp_ns;
  net::Endpoints endpoints;  // of a MoldUDP64 packet: to rebuild it when cut
  std::vector<uint8_t> frame;  // as written: a rebuilt UDP frame, or an untouched one
  bool mold = false;           // a MoldUDP64 packet we parsed
  bool end_of_session = false;
  uint64_t first_seq = 0;
  uint16_t count = 0;  // messages
  Fault fault = Fault::kNone;
  double key = 0;  // output order
};

// Where the UDP payload of a frame we built starts.
constexpr size_t kPayloadOffset = net::kUdpFrameOverhead;

std::vector<uint8_t> build(const net::Endpoints& ep, uint16_t ip_id, const uint8_t* payload, size_t len) {
  std::vector<uint8_t> frame(net::kUdpFrameOverhead + len);
  net::build_udp_frame(frame.data(), frame.size(), ep, ip_id, payload, len);
  return frame;
}

// The `which`-th message of a MoldUDP64 packet we built: where its length field is.
size_t message_at(const Item& it, uint64_t which) {
  size_t off = kPayloadOffset + mold::kHeaderLength;
  for (uint64_t m = 0; m < which; ++m) off += 2 + load_be16(&it.frame[off]);
  return off;
}

// A payload changed in place: the UDP checksum covers it.
void reseal(Item& it) {
  const size_t udp = 14 + 20;
  store_be16(&it.frame[udp + 6], 0);
  store_be16(&it.frame[udp + 6], net::udp_checksum(it.endpoints.src_ip, it.endpoints.dst_ip, &it.frame[udp],
                                                   it.frame.size() - udp));
}

// One faulted packet: its count, its messages and their sequence numbers.
void tally(uint64_t& packets, uint64_t& messages, std::vector<uint64_t>& sequences, const Item& it) {
  ++packets;
  messages += it.count;
  for (uint16_t i = 0; i < it.count; ++i) sequences.push_back(it.first_seq + i);
}

}  // namespace

FaultReport inject_faults(const std::string& in, const std::string& out, const FaultOptions& o) {
  if (o.reorder_window < 1 || o.reorder_window > 64) throw std::runtime_error("--reorder-window must be 1..64");
  net::PcapReader reader(in);
  const int linktype = reader.linktype();
  FaultReport r;
  std::vector<Item> items;
  net::PcapRecord rec;
  uint16_t ip_id = 0;
  for (;;) {
    const auto n = reader.next(rec);
    if (n == net::PcapReader::Next::kEnd) break;
    if (n == net::PcapReader::Next::kError) throw std::runtime_error(in + ": " + reader.error());
    Item it{rec.timestamp_ns, {}, {}, false, false, 0, 0, Fault::kNone, 0};
    net::UdpDatagram dg;
    mold::Packet pkt;
    if (net::extract_udp(linktype, rec.data, rec.caplen, dg) == net::FrameStatus::kOk &&
        mold::parse(dg.payload, dg.length, pkt) == mold::ParseStatus::kOk) {
      it.endpoints.src_ip = dg.src_ip;
      it.endpoints.dst_ip = dg.dst_ip;
      it.endpoints.src_port = dg.src_port;
      it.endpoints.dst_port = dg.dst_port;
      it.frame = build(it.endpoints, ip_id++, dg.payload, dg.length);
      it.mold = true;
      it.end_of_session = pkt.kind() == mold::PacketKind::kEndOfSession;
      it.first_seq = pkt.sequence();
      it.count = pkt.count();
      r.messages_in += it.count;
    } else if (linktype == net::kLinkEthernet) {
      it.frame.assign(rec.data, rec.data + rec.caplen);
      ++r.passed_unparsed;
    } else {
      throw std::runtime_error(in + ": a frame that is not MoldUDP64 over UDP on a non-Ethernet capture "
                               "cannot be passed through; filter the feed first");
    }
    items.push_back(std::move(it));
  }
  r.packets_in = items.size();

  // Draw faults in capture order, one stream of random numbers: the same seed
  // and input give the same output.
  Rng rng(o.seed);
  bool first_mold = true;
  uint32_t burst_left = 0;
  size_t next_barrier = items.size();  // index of the next end of session (nothing moves past it)
  std::vector<size_t> barrier_after(items.size(), items.size());
  for (size_t i = items.size(); i-- > 0;) {
    if (items[i].end_of_session) next_barrier = i;
    barrier_after[i] = next_barrier;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    Item& it = items[i];
    it.key = double(i);
    if (!it.mold || it.end_of_session || first_mold) {
      first_mold = first_mold && !it.mold;
      continue;
    }
    if (burst_left == 0 && o.burst_ppm && rng.chance_ppm(o.burst_ppm)) burst_left = o.burst_length;
    if (burst_left) {
      --burst_left;
      it.fault = Fault::kDrop;
    } else if (rng.chance_ppm(o.drop_ppm)) {
      it.fault = Fault::kDrop;
    } else if (rng.chance_ppm(o.duplicate_ppm)) {
      it.fault = Fault::kDuplicate;
    } else if (rng.chance_ppm(o.reorder_ppm)) {
      it.fault = Fault::kReorder;
      const uint64_t k = rng.between(1, o.reorder_window);
      // Lands right after packet i + k, but before the next end of session.
      it.key = std::min(double(i + k) + 0.5, double(barrier_after[i]) - 0.5);
    } else if (rng.chance_ppm(o.truncate_ppm)) {
      it.fault = Fault::kTruncate;
      const size_t payload = it.frame.size() - kPayloadOffset;
      const size_t cut = size_t(rng.below(payload));  // any strict prefix fails validation
      std::vector<uint8_t> p(it.frame.begin() + kPayloadOffset, it.frame.begin() + long(kPayloadOffset + cut));
      it.frame = build(it.endpoints, load_be16(&it.frame[14 + 4]), p.data(), p.size());
    } else if (it.count > 0 && rng.chance_ppm(o.corrupt_ppm)) {
      it.fault = Fault::kCorrupt;
      const uint64_t which = rng.below(it.count);
      const size_t off = message_at(it, which);
      const uint16_t len = load_be16(&it.frame[off]);
      uint8_t* msg = &it.frame[off + 2];
      const uint64_t seq = it.first_seq + which;
      if (len > 1 && rng.chance_ppm(500000)) {
        msg[1 + rng.below(len - 1)] ^= uint8_t(1u << rng.below(8));
        ++r.corrupted_messages_decoded;
        r.corrupted_decoded_sequences.push_back(seq);
      } else if (len > 0) {
        msg[0] = uint8_t('0' + rng.below(10));
        ++r.corrupted_messages_rejected;
        r.corrupted_rejected_sequences.push_back(seq);
      }
      reseal(it);
    }
  }

  // The messages named to be rejected, whatever their packet drew: each type byte a digit (an unknown type).
  for (Item& it : items) {
    if (!it.mold || it.count == 0) continue;
    auto named = std::lower_bound(o.reject_sequences.begin(), o.reject_sequences.end(), it.first_seq);
    bool damaged = false;
    for (; named != o.reject_sequences.end() && *named < it.first_seq + it.count; ++named) {
      const size_t off = message_at(it, *named - it.first_seq);
      if (load_be16(&it.frame[off]) == 0) continue;
      it.frame[off + 2] = '0';
      ++r.corrupted_messages_rejected;
      r.corrupted_rejected_sequences.push_back(*named);
      damaged = true;
    }
    if (!damaged) continue;
    reseal(it);
    if (it.fault != Fault::kCorrupt) ++r.corrupted_packets;
  }

  // Output order: by key; a duplicate right after its original.
  std::vector<std::pair<double, const Item*>> order;
  for (const Item& it : items) {
    if (it.fault == Fault::kDrop) continue;
    order.emplace_back(it.key, &it);
    if (it.fault == Fault::kDuplicate) order.emplace_back(it.key + 0.25, &it);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  // Count what each fault really did, in the output as the gateway sees it.
  uint64_t highest_end = 0;  // one past the highest sequence emitted so far
  std::vector<bool> seen_once(items.size(), false);
  for (const auto& [key, it] : order) {
    (void)key;
    if (!it->mold) continue;
    const uint64_t end = it->first_seq + it->count;
    if (it->fault == Fault::kReorder && it->first_seq < highest_end)
      tally(r.reordered_packets, r.reordered_messages, r.reordered_sequences, *it);
    highest_end = std::max(highest_end, end);
  }
  for (const Item& it : items) {
    switch (it.fault) {
      case Fault::kDrop:
        tally(r.dropped_packets, r.dropped_messages, r.dropped_sequences, it);
        break;
      case Fault::kDuplicate:
        tally(r.duplicated_packets, r.duplicated_messages, r.duplicated_sequences, it);
        break;
      case Fault::kTruncate:
        tally(r.truncated_packets, r.truncated_messages, r.truncated_sequences, it);
        break;
      case Fault::kCorrupt:
        ++r.corrupted_packets;
        break;
      case Fault::kReorder:
      case Fault::kNone:
        break;
    }
  }
  for (auto* v : {&r.dropped_sequences, &r.duplicated_sequences, &r.reordered_sequences, &r.truncated_sequences,
                  &r.corrupted_rejected_sequences, &r.corrupted_decoded_sequences})
    std::sort(v->begin(), v->end());

  net::PcapWriter writer(out, net::kLinkEthernet);
  uint64_t last_ts = 0;
  for (const auto& [key, it] : order) {
    (void)key;
    last_ts = std::max(last_ts, it->timestamp_ns);  // a moved packet is sent when it now arrives
    writer.write(last_ts, it->frame.data(), it->frame.size());
    ++r.packets_out;
  }
  writer.commit();
  return r;
}

std::string fault_report_json(const FaultReport& r, const FaultOptions& o) {
  JsonWriter j;
  j.begin_object();
  j.field("seed", o.seed);
  j.field("packets_in", r.packets_in).field("packets_out", r.packets_out).field("messages_in", r.messages_in);
  j.field("passed_unparsed", r.passed_unparsed);
  j.field("dropped_packets", r.dropped_packets).field("dropped_messages", r.dropped_messages);
  j.field("duplicated_packets", r.duplicated_packets).field("duplicated_messages", r.duplicated_messages);
  j.field("reordered_packets", r.reordered_packets).field("reordered_messages", r.reordered_messages);
  j.field("truncated_packets", r.truncated_packets).field("truncated_messages", r.truncated_messages);
  j.field("corrupted_packets", r.corrupted_packets);
  j.field("corrupted_messages_rejected", r.corrupted_messages_rejected);
  j.field("corrupted_messages_decoded", r.corrupted_messages_decoded);
  j.key("options").begin_object();
  j.field("drop_ppm", uint64_t(o.drop_ppm)).field("duplicate_ppm", uint64_t(o.duplicate_ppm));
  j.field("reorder_ppm", uint64_t(o.reorder_ppm)).field("reorder_window", uint64_t(o.reorder_window));
  j.field("truncate_ppm", uint64_t(o.truncate_ppm)).field("corrupt_ppm", uint64_t(o.corrupt_ppm));
  j.field("burst_length", uint64_t(o.burst_length)).field("burst_ppm", uint64_t(o.burst_ppm));
  j.end_object();
  j.key("sequences").begin_object();
  const std::pair<const char*, const std::vector<uint64_t>*> lists[] = {
      {"dropped", &r.dropped_sequences},
      {"duplicated", &r.duplicated_sequences},
      {"reordered", &r.reordered_sequences},
      {"truncated", &r.truncated_sequences},
      {"corrupted_rejected", &r.corrupted_rejected_sequences},
      {"corrupted_decoded", &r.corrupted_decoded_sequences}};
  for (const auto& [name, v] : lists) {
    j.key(name).begin_array();
    for (uint64_t s : *v) j.value(s);
    j.end_array();
  }
  j.end_object();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace itchbench::replay
