// A BBO event as the BBO log's record, which is also the frame every BBO publisher sends (FORMAT.md, "BBO record").
#pragma once
#include "book/bbo.hpp"
#include "log/log_format.hpp"

namespace itchbench {

// Every field but the flags, which carry the written marker: a log's writer stores them last (RecordLog::commit).
// Field by field into r, which may be the log's own mapped record (a record built on the stack and copied out was
// narrow stores read back wide, a store-forwarding stall).
inline void fill_bbo_record(logfmt::BboRecord& r, const BboEvent& e) {
  r.seq = e.seq;
  r.timestamp = e.timestamp;
  r.bid_qty = e.bbo.bid_qty;
  r.ask_qty = e.bbo.ask_qty;
  r.bid_px = e.bbo.bid_px;
  r.ask_px = e.bbo.ask_px;
  r.stock_locate = e.stock_locate;
}

}  // namespace itchbench
