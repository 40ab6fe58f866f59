// The gateway's counters as JSON (gateway.json in a run directory): what the
// harness reconciles and reports. Shared by every source.
#pragma once
#include <string>

#include "pipeline/gateway.hpp"
#include "util/json_writer.hpp"

namespace itchbench {

template <class Publisher>
void write_pipeline_counters(JsonWriter& j, const Gateway<Publisher>& gw, const OrderBook& book) {
  const FramerCounters& fc = gw.framer().counters();
  const SequenceCounters& sc = gw.framer().sequence().counters();
  const DecodeCounters& dc = gw.decode_counters();
  j.key("mold").begin_object();
  j.field("packets", fc.packets).field("heartbeats", fc.heartbeats).field("end_of_session", fc.end_of_session);
  j.field("rejected_too_short", fc.rejected_too_short)
      .field("rejected_length_overrun", fc.rejected_length_overrun)
      .field("rejected_count_mismatch", fc.rejected_count_mismatch);
  j.field("messages", fc.messages);
  j.end_object();
  j.key("sequence").begin_object();
  j.field("gap_events", sc.gap_events).field("gap_messages", sc.gap_messages);
  j.field("duplicate_messages", sc.duplicate_messages).field("reordered_messages", sc.reordered_messages);
  j.field("missing_messages", sc.missing_messages());
  j.end_object();
  j.key("decode").begin_object();
  j.field("messages", dc.messages());
  j.key("per_type").begin_object();
  for (const auto& t : itch::kTypes) j.field(std::string(1, t.type), dc.per_type[itch::type_index(t.type)]);
  j.end_object();
  j.field("rejected_unknown_type", dc.unknown_type).field("rejected_wrong_length", dc.wrong_length);
  j.field("rejected_empty", dc.empty);
  j.end_object();
  j.key("book").begin_object();
  j.field("unknown_refs", book.counters().unknown_refs).field("duplicate_refs", book.counters().duplicate_refs);
  j.field("invalid_orders", book.counters().invalid_orders);
  j.field("live_orders_at_end", uint64_t(book.live_orders()));
  j.field("memory_bytes", uint64_t(book.memory_bytes())).field("index_grows", book.index_grows());
  j.field("index_mixed_hash", book.index_mixed_hash());
  j.end_object();
  j.field("bbo_events", gw.bbo_events());
  j.key("symbols").begin_object();
  for (size_t locate = 0; locate < OrderBook::kStocks; ++locate)
    if (gw.symbols().has(uint16_t(locate)))
      j.field(std::to_string(locate), gw.symbols().name(uint16_t(locate)).trimmed());
  j.end_object();
}

}  // namespace itchbench
