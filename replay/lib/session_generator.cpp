#include "replay/lib/session_generator.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace itchbench::replay {

namespace {

constexpr uint64_t kDayNs = 86400ull * 1000000000ull;
constexpr uint32_t kTick = 100;  // $0.01 in 4-decimal price units
constexpr uint64_t kUnknownRefBase = 1ull << 62;  // never issued by adds
const char* const kSeedSymbols[] = {"AAPL", "GOOGL", "MSFT", "NVDA", "QQQ", "SPY", "TSLA", "AMZN"};

uint32_t& weight(MessageMix& mix, char type) { return mix[itch::type_index(type)]; }

struct LiveOrder {
  uint64_t ref;
  uint32_t shares;
  uint32_t price;
  uint16_t locate;
  char side;
};

class Generator {
 public:
  Generator(const GeneratorConfig& cfg, const MessageSink& sink) : cfg_(cfg), sink_(sink), rng_(cfg.seed) {
    if (cfg_.symbols.empty()) throw std::invalid_argument("at least one symbol is needed");
    if (cfg_.symbols.size() > 65535) throw std::invalid_argument("at most 65535 symbols");
    uint64_t total_weight = 0;
    for (uint32_t w : cfg_.mix) total_weight += w;
    if (total_weight == 0) throw std::invalid_argument("the message mix has no weight");
    uint64_t acc = 0;
    for (size_t i = 0; i < itch::kTypeCount; ++i) mix_cumulative_[i] = acc += cfg_.mix[i];
    // Zipf-like popularity (weight 1/rank) for many symbols; uniform for few.
    uint64_t sacc = 0;
    for (size_t i = 0; i < cfg_.symbols.size(); ++i) {
      sacc += cfg_.symbols.size() <= 8 ? 1 : 1000000 / (i + 1);
      symbol_cumulative_.push_back(sacc);
      if (cfg_.wide_prices) {
        draw_wide_mid();
      } else {
        mids_.push_back(uint32_t(rng_.between(1000, 50000)) * kTick);  // $10..$500
        ticks_.push_back(kTick);
      }
    }
    now_ = cfg_.start_ns;
  }

  GeneratorStats run() {
    const uint64_t pre = preamble_length();
    const uint64_t post = cfg_.end_of_day_events ? 3 : 0;
    if (cfg_.messages < pre + post)
      throw std::invalid_argument("--messages must be at least " + std::to_string(pre + post) +
                                  " for this profile and symbol count (preamble + end of day)");
    preamble();
    const uint64_t body = cfg_.messages - pre - post;
    for (uint64_t i = 0; i < body; ++i) {
      advance(next_gap());
      body_message(draw_type());
    }
    if (cfg_.end_of_day_events)
      for (char code : {'M', 'E', 'C'}) system_event(code);
    stats_.last_timestamp_ns = now_;
    return stats_;
  }

 private:
  uint64_t preamble_length() const {
    const uint64_t n = cfg_.symbols.size();
    return 3 + n + (cfg_.profile == "nasdaq-day" ? n + 1 : 0);
  }

  void preamble() {
    system_event('O');
    for (size_t i = 0; i < cfg_.symbols.size(); ++i) stock_directory(uint16_t(i + 1));
    if (cfg_.profile == "nasdaq-day") {
      itch::MwcbDeclineLevel v;
      v.level1 = 300000000000ull;  // Price(8): $3000.00000000
      v.level2 = 280000000000ull;
      v.level3 = 260000000000ull;
      emit(v, 0);
      for (size_t i = 0; i < cfg_.symbols.size(); ++i) {
        itch::StockTradingAction h;
        h.stock = itch::alpha8::from(cfg_.symbols[i]);
        h.trading_state = 'T';
        h.reserved = ' ';
        h.reason = itch::alpha4::from("");
        emit(h, uint16_t(i + 1));
      }
    }
    system_event('S');
    system_event('Q');
  }

  void advance(uint64_t gap) {
    now_ += gap;
    if (now_ >= kDayNs)
      throw std::invalid_argument("session runs past midnight: fewer messages or a higher rate");
  }

  uint64_t next_gap() {
    const Timing& t = cfg_.timing;
    if (t.burst_mean_gap_ns != 0) {
      if (in_burst_) {
        if (rng_.chance_ppm(t.leave_burst_ppm)) in_burst_ = false;
      } else if (rng_.chance_ppm(t.enter_burst_ppm)) {
        in_burst_ = true;
      }
    }
    const uint64_t mean = in_burst_ ? t.burst_mean_gap_ns : t.quiet_mean_gap_ns;
    return mean == 0 ? 0 : rng_.below(2 * mean + 1);
  }

  char draw_type() {
    const uint64_t r = rng_.below(mix_cumulative_[itch::kTypeCount - 1]);
    const size_t i = size_t(std::upper_bound(mix_cumulative_.begin(), mix_cumulative_.end(), r) -
                            mix_cumulative_.begin());
    return itch::kTypes[i].type;
  }

  uint16_t draw_locate() {
    const uint64_t r = rng_.below(symbol_cumulative_.back());
    return uint16_t(std::upper_bound(symbol_cumulative_.begin(), symbol_cumulative_.end(), r) -
                    symbol_cumulative_.begin() + 1);
  }
  // A decade of prices from $0.10 to $199,000, each as likely: a float's 24-bit mantissa holds no price from
  // $1,677.7216 on exactly, and below $1 prices step by $0.0001.
  void draw_wide_mid() {
    struct Decade {
      uint32_t lo, hi, tick;
    };
    static constexpr Decade kDecades[] = {{1000, 9999, 1},         {10000, 99900, kTick},
                                          {100000, 999900, kTick}, {1000000, 9999900, kTick},
                                          {10000000, 99999900, kTick}, {100000000, 999999900, kTick},
                                          {1000000000, 1990000000, kTick}};
    const Decade& d = kDecades[rng_.below(std::size(kDecades))];
    mids_.push_back(uint32_t(rng_.between(d.lo / d.tick, d.hi / d.tick)) * d.tick);
    ticks_.push_back(d.tick);
  }
  // The locate a stock has on the wire: its place in the directory, or that place spread over 1..65,535.
  uint16_t wire_locate(uint16_t locate) const {
    const uint64_t n = cfg_.symbols.size();
    if (!cfg_.spread_locates || locate == 0 || n == 1) return locate;
    return uint16_t(1 + (uint64_t(locate) - 1) * 65534 / (n - 1));
  }
  const std::string& symbol(uint16_t locate) const { return cfg_.symbols[locate - 1]; }
  itch::alpha8 stock(uint16_t locate) const { return itch::alpha8::from(symbol(locate)); }

  uint32_t draw_shares() {
    if (cfg_.block_order_ppm && rng_.chance_ppm(cfg_.block_order_ppm))
      return uint32_t(rng_.between(65536, 50000000));  // a block
    if (rng_.chance_ppm(200000)) return uint32_t(rng_.between(1, 99));  // odd lot
    return 100 * (1 + rng_.geometric(9));
  }
  // Mostly at or near the touch, occasionally deep in the book.
  uint32_t draw_price(uint16_t locate, char side) {
    uint32_t& mid = mids_[locate - 1];
    const uint32_t tick = ticks_[locate - 1];
    if (rng_.chance_ppm(20000)) {  // the market drifts by a tick now and then
      if (rng_.below(2) == 0 && mid > 1000 * tick)
        mid -= tick;
      else
        mid += tick;
    }
    const uint32_t offset = tick * uint32_t(cfg_.price_band_ticks ? rng_.between(1, cfg_.price_band_ticks)
                                                                   : 1 + rng_.geometric(20));
    return side == 'B' ? mid - offset : mid + offset;
  }
  char draw_side() { return rng_.below(2) == 0 ? 'B' : 'S'; }
  uint64_t next_match() { return ++match_number_; }

  template <class Msg>
  void emit(Msg& m, uint16_t locate) {
    m.stock_locate = wire_locate(locate);
    m.tracking_number = 0;
    m.timestamp = now_;
    uint8_t buf[itch::kMaxMessageLength];
    m.encode(buf);
    sink_(buf, uint16_t(Msg::kLength), now_);
    ++stats_.messages;
    ++stats_.per_type[itch::type_index(Msg::kType)];
  }

  void system_event(char code) {
    itch::SystemEvent s;
    s.event_code = uint8_t(code);
    emit(s, 0);
    advance(1000);
  }

  void stock_directory(uint16_t locate) {
    itch::StockDirectory r;
    r.stock = stock(locate);
    r.market_category = 'Q';
    r.financial_status_indicator = 'N';
    r.round_lot_size = 100;
    r.round_lots_only = 'N';
    r.issue_classification = 'C';
    r.issue_subtype = itch::alpha2::from("Z");
    r.authenticity = 'P';
    r.short_sale_threshold_indicator = 'N';
    r.ipo_flag = ' ';
    r.luld_reference_price_tier = '1';
    r.etp_flag = 'N';
    r.etp_leverage_factor = 0;
    r.inverse_indicator = 'N';
    emit(r, locate);
  }

  // A live order to act on; nullptr when the book is empty.
  LiveOrder* pick_live(size_t& index) {
    if (live_.empty()) return nullptr;
    index = size_t(rng_.below(live_.size()));
    return &live_[index];
  }
  void remove_live(size_t index) {
    live_[index] = live_.back();
    live_.pop_back();
  }

  void add_order(bool with_mpid) {
    if (cfg_.stacked_order_ppm && rng_.chance_ppm(cfg_.stacked_order_ppm)) {
      const uint16_t last = uint16_t(mids_.size());
      add(with_mpid, {next_ref_++, uint32_t(rng_.between(1ull << 31, UINT32_MAX)), mids_[last - 1] - ticks_[last - 1],
                      last, 'B'});
      return;
    }
    const uint16_t locate = draw_locate();
    const char side = draw_side();
    add(with_mpid, {next_ref_++, draw_shares(), draw_price(locate, side), locate, side});
  }
  void add(bool with_mpid, const LiveOrder& o) {
    const uint16_t locate = o.locate;
    const char side = o.side;
    live_.push_back(o);
    stats_.max_live_orders = std::max<uint64_t>(stats_.max_live_orders, live_.size());
    if (with_mpid) {
      itch::AddOrderMpid f;
      f.order_ref = o.ref;
      f.side = uint8_t(side);
      f.shares = o.shares;
      f.stock = stock(locate);
      f.price = o.price;
      f.attribution = itch::alpha4::from(rng_.below(2) ? "GSCO" : "MSCO");
      emit(f, locate);
    } else {
      itch::AddOrder a;
      a.order_ref = o.ref;
      a.side = uint8_t(side);
      a.shares = o.shares;
      a.stock = stock(locate);
      a.price = o.price;
      emit(a, locate);
    }
  }

  // Messages that act on an existing order. Returns false when there is no
  // live order (the caller adds one instead).
  bool order_message(char type) {
    if (cfg_.unknown_ref_ppm && rng_.chance_ppm(cfg_.unknown_ref_ppm)) {
      unknown_ref_message(type);
      return true;
    }
    size_t index = 0;
    LiveOrder* o = pick_live(index);
    if (!o) return false;
    switch (type) {
      case 'E':
      case 'C': {
        const uint32_t executed = rng_.below(3) == 0 ? o->shares : uint32_t(rng_.between(1, o->shares));
        if (type == 'E') {
          itch::OrderExecuted e;
          e.order_ref = o->ref;
          e.executed_shares = executed;
          e.match_number = next_match();
          emit(e, o->locate);
        } else {
          itch::OrderExecutedWithPrice c;
          c.order_ref = o->ref;
          c.executed_shares = executed;
          c.match_number = next_match();
          c.printable = rng_.below(4) ? 'Y' : 'N';
          c.execution_price = o->price + (o->side == 'B' ? ticks_[o->locate - 1] : 0);
          emit(c, o->locate);
        }
        o->shares -= executed;
        if (o->shares == 0) remove_live(index);
        break;
      }
      case 'X': {
        itch::OrderCancel x;
        x.order_ref = o->ref;
        x.cancelled_shares = uint32_t(rng_.between(1, o->shares));
        emit(x, o->locate);
        o->shares -= x.cancelled_shares;
        if (o->shares == 0) remove_live(index);
        break;
      }
      case 'D': {
        itch::OrderDelete d;
        d.order_ref = o->ref;
        emit(d, o->locate);
        remove_live(index);
        break;
      }
      case 'U': {
        itch::OrderReplace u;
        u.original_order_ref = o->ref;
        u.new_order_ref = next_ref_++;
        u.shares = draw_shares();
        u.price = draw_price(o->locate, o->side);
        if (cfg_.price_changing_replaces && u.price == o->price)
          u.price = o->side == 'B' ? u.price - ticks_[o->locate - 1] : u.price + ticks_[o->locate - 1];
        emit(u, o->locate);
        o->ref = u.new_order_ref;
        o->shares = u.shares;
        o->price = u.price;
        break;
      }
    }
    return true;
  }

  void unknown_ref_message(char type) {
    const uint16_t locate = draw_locate();
    const uint64_t ref = kUnknownRefBase + unknown_refs_++;
    switch (type) {
      case 'E': { itch::OrderExecuted e; e.order_ref = ref; e.executed_shares = 100; e.match_number = next_match(); emit(e, locate); break; }
      case 'C': { itch::OrderExecutedWithPrice c; c.order_ref = ref; c.executed_shares = 100; c.match_number = next_match(); c.printable = 'Y'; c.execution_price = mids_[locate - 1]; emit(c, locate); break; }
      case 'X': { itch::OrderCancel x; x.order_ref = ref; x.cancelled_shares = 100; emit(x, locate); break; }
      case 'D': { itch::OrderDelete d; d.order_ref = ref; emit(d, locate); break; }
      case 'U': { itch::OrderReplace u; u.original_order_ref = ref; u.new_order_ref = next_ref_++; u.shares = 100; u.price = mids_[locate - 1]; emit(u, locate); break; }
    }
  }

  void body_message(char type) {
    switch (type) {
      case 'A': add_order(false); return;
      case 'F': add_order(true); return;
      case 'E': case 'C': case 'X': case 'D': case 'U':
        if (!order_message(type)) add_order(false);
        return;
      default: break;
    }
    const uint16_t locate = draw_locate();
    switch (type) {
      case 'S': { itch::SystemEvent s; s.event_code = 'Q'; emit(s, 0); break; }
      case 'R': stock_directory(locate); break;
      case 'H': { itch::StockTradingAction h; h.stock = stock(locate); h.trading_state = rng_.below(2) ? 'T' : 'Q'; h.reserved = ' '; h.reason = itch::alpha4::from(""); emit(h, locate); break; }
      case 'Y': { itch::RegShoRestriction y; y.stock = stock(locate); y.reg_sho_action = '0' + uint8_t(rng_.below(3)); emit(y, locate); break; }
      case 'L': { itch::MarketParticipantPosition l; l.mpid = itch::alpha4::from("GSCO"); l.stock = stock(locate); l.primary_market_maker = 'N'; l.market_maker_mode = 'N'; l.market_participant_state = 'A'; emit(l, locate); break; }
      case 'V': { itch::MwcbDeclineLevel v; v.level1 = 300000000000ull; v.level2 = 280000000000ull; v.level3 = 260000000000ull; emit(v, 0); break; }
      case 'W': { itch::MwcbStatus w; w.breached_level = '1'; emit(w, 0); break; }
      case 'K': { itch::IpoQuotingPeriodUpdate k; k.stock = stock(locate); k.ipo_quotation_release_time = 36000; k.ipo_quotation_release_qualifier = 'A'; k.ipo_price = mids_[locate - 1]; emit(k, locate); break; }
      case 'J': { itch::LuldAuctionCollar j; const uint32_t m = mids_[locate - 1], tick = ticks_[locate - 1]; j.stock = stock(locate); j.auction_collar_reference_price = m; j.upper_auction_collar_price = m + 50 * tick; j.lower_auction_collar_price = m - 50 * tick; j.auction_collar_extension = uint32_t(rng_.below(3)); emit(j, locate); break; }
      case 'h': { itch::OperationalHalt h; h.stock = stock(locate); h.market_code = 'Q'; h.operational_halt_action = rng_.below(2) ? 'H' : 'T'; emit(h, locate); break; }
      case 'P': { itch::Trade p; p.order_ref = 0; p.side = 'B'; p.shares = draw_shares(); p.stock = stock(locate); p.price = mids_[locate - 1]; p.match_number = next_match(); emit(p, locate); break; }
      case 'Q': { itch::CrossTrade q; q.shares = draw_shares() * 10ull; q.stock = stock(locate); q.cross_price = mids_[locate - 1]; q.match_number = next_match(); q.cross_type = "OCHI"[rng_.below(4)]; emit(q, locate); break; }
      case 'B': { itch::BrokenTrade b; b.match_number = match_number_ ? rng_.between(1, match_number_) : 0; emit(b, locate); break; }
      case 'I': { itch::Noii n; const uint32_t m = mids_[locate - 1]; n.paired_shares = draw_shares() * 10ull; n.imbalance_shares = draw_shares(); n.imbalance_direction = "BSNO"[rng_.below(4)]; n.stock = stock(locate); n.far_price = m; n.near_price = m; n.current_reference_price = m; n.cross_type = "OCH"[rng_.below(3)]; n.price_variation_indicator = 'L'; emit(n, locate); break; }
      case 'N': { itch::RetailPriceImprovement n; n.stock = stock(locate); n.interest_flag = "BSAN"[rng_.below(4)]; emit(n, locate); break; }
      case 'O': { itch::DirectListingPriceDiscovery o; const uint32_t m = mids_[locate - 1], tick = ticks_[locate - 1]; o.stock = stock(locate); o.open_eligibility_status = 'N'; o.minimum_allowable_price = m - 100 * tick; o.maximum_allowable_price = m + 100 * tick; o.near_execution_price = m; o.near_execution_time = now_; o.lower_price_range_collar = m - 200 * tick; o.upper_price_range_collar = m + 200 * tick; emit(o, locate); break; }
    }
  }

  const GeneratorConfig& cfg_;
  const MessageSink& sink_;
  Rng rng_;
  std::array<uint64_t, itch::kTypeCount> mix_cumulative_{};
  std::vector<uint64_t> symbol_cumulative_;
  std::vector<uint32_t> mids_;
  std::vector<uint32_t> ticks_;  // each stock's price step
  std::vector<LiveOrder> live_;
  uint64_t now_ = 0;
  uint64_t next_ref_ = cfg_.first_order_ref;
  uint64_t unknown_refs_ = 0;
  uint64_t match_number_ = 0;
  bool in_burst_ = false;
  GeneratorStats stats_;
};

}  // namespace

MessageMix parse_mix(const std::string& spec) {
  MessageMix mix{};
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t eq = item.find('=');
    if (eq != 1 || item.size() < 3 || !itch::is_known_type(item[0]))
      throw std::invalid_argument("bad mix entry '" + item + "': expected TYPE=WEIGHT, e.g. A=44");
    size_t used = 0;
    unsigned long w = 0;
    try {
      w = std::stoul(item.substr(2), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() - 2 || w > 1000000000ul)
      throw std::invalid_argument("bad weight in mix entry '" + item + "'");
    mix[itch::type_index(item[0])] = uint32_t(w);
  }
  return mix;
}

std::string format_mix(const MessageMix& mix) {
  std::string out;
  for (size_t i = 0; i < itch::kTypeCount; ++i) {
    if (!mix[i]) continue;
    if (!out.empty()) out += ',';
    out += std::string(1, itch::kTypes[i].type) + "=" + std::to_string(mix[i]);
  }
  return out;
}

std::vector<std::string> synthetic_symbols(size_t count) {
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    if (i < 8) {
      out.emplace_back(kSeedSymbols[i]);
      continue;
    }
    // Four letters from the index, prefixed with Z: never a seed symbol.
    std::string s = "Z";
    size_t n = i;
    for (int k = 0; k < 4; ++k, n /= 26) s += char('A' + n % 26);
    out.push_back(s);
  }
  return out;
}

GeneratorConfig seed_workload_profile() {
  GeneratorConfig c;
  c.profile = "seed-workload";
  c.messages = 7000;
  c.symbols = synthetic_symbols(8);
  weight(c.mix, 'A') = 987;
  weight(c.mix, 'U') = 13;
  c.price_changing_replaces = true;
  c.timing.quiet_mean_gap_ns = 2409639;  // 1 s / 415
  return c;
}

GeneratorConfig nasdaq_day_profile(size_t symbol_count) {
  GeneratorConfig c;
  c.profile = "nasdaq-day";
  c.messages = 1000000;
  c.symbols = synthetic_symbols(symbol_count);
  // Shares of a real day's message count (in 0.01%); rare types get enough
  // weight to appear in small samples.
  c.mix = parse_mix("A=4400,D=4300,U=700,E=200,X=100,I=100,F=40,C=20,P=50,Q=5,B=5,H=5,Y=5,"
                    "L=5,K=5,J=5,h=5,N=5,O=5,W=5,V=5,R=5,S=0");
  c.timing.quiet_mean_gap_ns = 20000;  // 50k msg/s between bursts
  c.timing.burst_mean_gap_ns = 200;    // 5M msg/s inside bursts
  c.timing.enter_burst_ppm = 2000;
  c.timing.leave_burst_ppm = 10000;    // bursts of ~100 messages
  c.end_of_day_events = true;
  return c;
}

GeneratorConfig deep_book_profile() {
  // Books that keep growing: 40 stocks, adds outnumber removals two to one, prices anywhere in 400 ticks of
  // the mid. At the default 3 M messages: ~1.2 M live orders at the end, hundreds of levels a side; deletes,
  // executions and cancels name random live orders, most of them deep in the book.
  GeneratorConfig c = nasdaq_day_profile(40);
  c.profile = "deep-book";
  c.messages = 3000000;
  c.mix = parse_mix("A=6400,F=100,D=1600,E=900,C=100,X=400,U=500");
  c.price_band_ticks = 400;
  return c;
}

GeneratorConfig wide_fields_profile() {
  // Each field a gateway keeps across the range the spec gives it, where a real day's values stay in a corner of
  // it: a gateway that keeps one too narrow (a price in a float or in cents, a locate in a signed 16 bits, shares
  // summed in 32 bits, a reference in a double, a symbol in 7 characters) gets a wrong book here, as on no other
  // profile. 200 symbols, adds
  // outweighing removals so that orders rest, every message type.
  GeneratorConfig c = nasdaq_day_profile(200);
  c.profile = "wide-fields";
  // Symbols of 5 to 8 characters: a quarter fill Alpha(8) with no space after them.
  static constexpr size_t kSuffixLength[] = {3, 1, 2, 0};
  for (size_t i = 8; i < c.symbols.size(); ++i) c.symbols[i] += std::string("WXY", kSuffixLength[i % 4]);
  c.messages = 20000;
  c.mix = parse_mix("A=5500,D=2000,U=1000,E=600,X=500,C=200,I=100,F=100,P=50,Q=5,B=5,H=5,Y=5,L=5,K=5,J=5,h=5,"
                    "N=5,O=5,W=5,V=5,R=5,S=0");
  c.end_of_day_events = true;
  c.first_order_ref = 1ull << 63;  // above 2^53 (the last integer a double holds) and with a signed 64 bits' sign
  c.spread_locates = true;         // half the symbols above 32,767
  c.wide_prices = true;
  c.block_order_ppm = 10000;
  c.stacked_order_ppm = 2000;
  return c;
}

GeneratorConfig profile_by_name(const std::string& name) {
  if (name == "seed-workload") return seed_workload_profile();
  if (name == "nasdaq-day") return nasdaq_day_profile();
  if (name == "deep-book") return deep_book_profile();
  if (name == "wide-fields") return wide_fields_profile();
  throw std::invalid_argument("unknown profile '" + name +
                              "' (profiles: seed-workload, nasdaq-day, deep-book, wide-fields)");
}

GeneratorStats generate_session(const GeneratorConfig& config, const MessageSink& sink) {
  return Generator(config, sink).run();
}

}  // namespace itchbench::replay
