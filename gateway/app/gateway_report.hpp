// The gateway's counters as JSON (gateway.json in a run directory): what the
// harness reconciles and reports. Shared by every source.
#pragma once
#include <string>

#include "pipeline/counters_json.hpp"
#include "pipeline/gateway.hpp"
#include "util/json_writer.hpp"

namespace itchbench {

// Decoder, book, BBO and symbol counters; the caller writes the framing
// ("mold", "sequence") of its source.
template <class Publisher>
void write_pipeline_counters(JsonWriter& j, const Gateway<Publisher>& gw, const OrderBook& book) {
  write_decode_json(j, gw.decode_counters());
  j.key("book").begin_object();
  j.field("unknown_refs", book.counters().unknown_refs).field("duplicate_refs", book.counters().duplicate_refs);
  j.field("invalid_orders", book.counters().invalid_orders);
  j.field("live_orders_at_end", uint64_t(book.live_orders()));
  j.field("memory_bytes", uint64_t(book.memory_bytes())).field("index_grows", book.index_grows());
  j.field("index_overflowed", book.index_overflowed()).field("levels_off_ladder", book.levels_off_ladder());
  j.end_object();
  j.field("bbo_events", gw.bbo_events()).field("depth_events", gw.depth_events());
  j.key("symbols").begin_object();
  for (size_t locate = 0; locate < OrderBook::kStocks; ++locate)
    if (gw.symbols().has(uint16_t(locate)))
      j.field(std::to_string(locate), gw.symbols().name(uint16_t(locate)).printable());
  j.end_object();
}

}  // namespace itchbench
