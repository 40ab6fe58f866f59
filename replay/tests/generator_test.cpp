#include <gtest/gtest.h>

#include <map>
#include <type_traits>
#include <vector>

#include "net/pcap_io.hpp"
#include "pipeline/mold_framer.hpp"
#include "protocol/itch.hpp"
#include "replay/lib/itch_file_writer.hpp"
#include "replay/lib/mold_packetizer.hpp"
#include "replay/lib/session_generator.hpp"
#include "book/order_book.hpp"
#include "source/capture_file.hpp"
#include "tests/test_files.hpp"

using namespace itchbench;
using namespace itchbench::replay;
using itchbench::testing::ScratchDir;

namespace {

struct Message {
  std::vector<uint8_t> bytes;
  uint64_t ts;
};

std::vector<Message> generate(const GeneratorConfig& cfg) {
  std::vector<Message> out;
  generate_session(cfg, [&](const uint8_t* m, uint16_t n, uint64_t ts) { out.push_back({{m, m + n}, ts}); });
  return out;
}

GeneratorConfig small_day(uint64_t seed, uint64_t messages = 20000) {
  GeneratorConfig c = nasdaq_day_profile(40);
  c.seed = seed;
  c.messages = messages;
  return c;
}

// Replays the stream against a plain map of live orders and fails on any
// reference to an order that is not live.
void expect_valid_book_dynamics(const std::vector<Message>& msgs) {
  std::map<uint64_t, uint32_t> live;
  for (const Message& m : msgs) {
    ASSERT_EQ(itch::decode(m.bytes.data(), m.bytes.size(), [&](auto v) {
      using V = decltype(v);
      if constexpr (std::is_same_v<V, itch::AddOrderView> || std::is_same_v<V, itch::AddOrderMpidView>) {
        ASSERT_TRUE(live.emplace(v.order_ref(), v.shares()).second) << "ref reused " << v.order_ref();
        ASSERT_TRUE(v.side() == 'B' || v.side() == 'S');
        ASSERT_GT(v.price(), 0u);
      } else if constexpr (std::is_same_v<V, itch::OrderExecutedView> ||
                           std::is_same_v<V, itch::OrderExecutedWithPriceView>) {
        auto it = live.find(v.order_ref());
        ASSERT_NE(it, live.end()) << "execution of unknown order";
        ASSERT_LE(v.executed_shares(), it->second);
        if ((it->second -= v.executed_shares()) == 0) live.erase(it);
      } else if constexpr (std::is_same_v<V, itch::OrderCancelView>) {
        auto it = live.find(v.order_ref());
        ASSERT_NE(it, live.end());
        ASSERT_LE(v.cancelled_shares(), it->second);
        if ((it->second -= v.cancelled_shares()) == 0) live.erase(it);
      } else if constexpr (std::is_same_v<V, itch::OrderDeleteView>) {
        ASSERT_EQ(live.erase(v.order_ref()), 1u);
      } else if constexpr (std::is_same_v<V, itch::OrderReplaceView>) {
        ASSERT_EQ(live.erase(v.original_order_ref()), 1u);
        ASSERT_TRUE(live.emplace(v.new_order_ref(), v.shares()).second);
      }
    }), itch::DecodeStatus::kOk);
  }
}

std::map<char, uint64_t> type_counts(const std::vector<Message>& msgs) {
  std::map<char, uint64_t> c;
  for (const Message& m : msgs) ++c[char(m.bytes[0])];
  return c;
}

}  // namespace

TEST(Generator, SameSeedSameStreamOtherSeedOtherStream) {
  const auto a = generate(small_day(7, 5000));
  const auto b = generate(small_day(7, 5000));
  const auto c = generate(small_day(8, 5000));
  ASSERT_EQ(a.size(), 5000u);
  bool same_ab = true, same_ac = true;
  for (size_t i = 0; i < a.size(); ++i) {
    same_ab &= a[i].bytes == b[i].bytes && a[i].ts == b[i].ts;
    same_ac &= a[i].bytes == c[i].bytes;
  }
  EXPECT_TRUE(same_ab);
  EXPECT_FALSE(same_ac);
}

TEST(Generator, BookDynamicsAreValidForManySeeds) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(seed);
    const auto msgs = generate(small_day(seed));
    expect_valid_book_dynamics(msgs);
    for (size_t i = 1; i < msgs.size(); ++i) ASSERT_GE(msgs[i].ts, msgs[i - 1].ts);
  }
  GeneratorConfig seed_cfg = seed_workload_profile();
  expect_valid_book_dynamics(generate(seed_cfg));
}

TEST(Generator, WideFieldsStayValidAndInTheSpecsRange) {
  // Prices near the top of Price(4) and sub-penny ones near $0.10, shares near 2^32: no draw may wrap.
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(seed);
    GeneratorConfig cfg = wide_fields_profile();
    cfg.seed = seed;
    const auto msgs = generate(cfg);
    expect_valid_book_dynamics(msgs);
    for (const Message& m : msgs) {
      ASSERT_EQ(itch::decode(m.bytes.data(), m.bytes.size(), [&](auto v) {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, itch::AddOrderView> || std::is_same_v<V, itch::AddOrderMpidView> ||
                      std::is_same_v<V, itch::OrderReplaceView>) {
          ASSERT_GT(v.price(), 0u);
          ASSERT_LE(v.price(), 1999999999u);  // 199,999.9999
          ASSERT_GT(v.shares(), 0u);
        } else if constexpr (std::is_same_v<V, itch::LuldAuctionCollarView>) {
          ASSERT_LT(v.lower_auction_collar_price(), v.auction_collar_reference_price());
          ASSERT_LE(v.upper_auction_collar_price(), 1999999999u);
        }
      }), itch::DecodeStatus::kOk);
    }
  }
}

TEST(Generator, UnknownReferencesOnlyWhenAskedFor) {
  GeneratorConfig c = small_day(3, 20000);
  c.unknown_ref_ppm = 50000;
  const auto msgs = generate(c);
  std::map<uint64_t, bool> live;
  uint64_t unknown = 0;
  for (const Message& m : msgs) {
    itch::decode(m.bytes.data(), m.bytes.size(), [&](auto v) {
      using V = decltype(v);
      if constexpr (std::is_same_v<V, itch::AddOrderView> || std::is_same_v<V, itch::AddOrderMpidView>)
        live[v.order_ref()] = true;
      else if constexpr (std::is_same_v<V, itch::OrderDeleteView>)
        unknown += live.count(v.order_ref()) ? 0 : 1;
    });
  }
  EXPECT_GT(unknown, 0u);
}

TEST(Generator, SeedWorkloadMatchesItsDescription) {
  const GeneratorConfig cfg = seed_workload_profile();
  const auto msgs = generate(cfg);
  ASSERT_EQ(msgs.size(), 7000u);
  auto counts = type_counts(msgs);
  EXPECT_EQ(counts['R'], 8u);
  const double body = double(counts['A'] + counts['U']);
  EXPECT_NEAR(counts['A'] / body, 0.987, 0.006);
  EXPECT_NEAR(counts['U'] / body, 0.013, 0.006);
  // Every replace changes the price.
  std::map<uint64_t, uint32_t> price;
  for (const Message& m : msgs) {
    itch::decode(m.bytes.data(), m.bytes.size(), [&](auto v) {
      using V = decltype(v);
      if constexpr (std::is_same_v<V, itch::AddOrderView>) price[v.order_ref()] = v.price();
      if constexpr (std::is_same_v<V, itch::OrderReplaceView>) {
        EXPECT_NE(price.at(v.original_order_ref()), v.price());
        price[v.new_order_ref()] = v.price();
      }
    });
  }
  const double seconds = (msgs.back().ts - msgs.front().ts) / 1e9;
  EXPECT_NEAR(msgs.size() / seconds, 415.0, 20.0);
}

TEST(Generator, NasdaqDayHasEveryTypeInRealProportions) {
  const auto msgs = generate(small_day(1, 200000));
  auto counts = type_counts(msgs);
  for (const auto& t : itch::kTypes) EXPECT_GT(counts[t.type], 0u) << t.type;
  const double n = double(msgs.size());
  EXPECT_NEAR(counts['A'] / n, 0.44, 0.02);
  EXPECT_NEAR(counts['D'] / n, 0.43, 0.02);
  EXPECT_NEAR(counts['U'] / n, 0.07, 0.01);
  EXPECT_NEAR(counts['E'] / n, 0.02, 0.01);
}

TEST(Generator, DeepBookEndsWithAMillionLiveOrdersAndHundredsOfLevels) {
  // The profile's promise, checked on the book the gateway builds from its stream.
  OrderBook book(1 << 20);
  const GeneratorStats stats = generate_session(deep_book_profile(), [&](const uint8_t* m, uint16_t n, uint64_t) {
    itch::decode(m, n, [&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, itch::AddOrderView> || std::is_same_v<V, itch::AddOrderMpidView>)
        book.add(v.stock_locate(), v.order_ref(), char(v.side()), v.shares(), v.price());
      else if constexpr (std::is_same_v<V, itch::OrderExecutedView> || std::is_same_v<V, itch::OrderExecutedWithPriceView>)
        book.reduce(v.order_ref(), v.executed_shares());
      else if constexpr (std::is_same_v<V, itch::OrderCancelView>)
        book.reduce(v.order_ref(), v.cancelled_shares());
      else if constexpr (std::is_same_v<V, itch::OrderDeleteView>)
        book.remove(v.order_ref());
      else if constexpr (std::is_same_v<V, itch::OrderReplaceView>)
        book.replace(v.original_order_ref(), v.new_order_ref(), v.shares(), v.price());
    });
  });
  EXPECT_EQ(stats.messages, 3000000u);
  EXPECT_GE(book.live_orders(), 1000000u);
  EXPECT_EQ(book.counters().unknown_refs, 0u);
  for (uint16_t locate = 1; locate <= 40; ++locate) {
    EXPECT_GE(book.levels(locate, 'B').size(), 300u) << locate;
    EXPECT_GE(book.levels(locate, 'S').size(), 300u) << locate;
  }
  // Removals name random live orders, most of them deep: deletes and executions are a third of the stream.
  EXPECT_GT(stats.per_type[itch::type_index('D')] + stats.per_type[itch::type_index('E')], 700000u);
}

TEST(Generator, RejectsImpossibleConfigurations) {
  GeneratorConfig c = seed_workload_profile();
  c.messages = 5;  // smaller than the preamble
  EXPECT_THROW(generate(c), std::invalid_argument);
  EXPECT_THROW(parse_mix("A=1,Z=2"), std::invalid_argument);
  EXPECT_THROW(parse_mix("A=x"), std::invalid_argument);
  EXPECT_THROW(profile_by_name("nope"), std::invalid_argument);
  EXPECT_EQ(format_mix(parse_mix("A=44,D=43")), "A=44,D=43");
}

TEST(Packetizer, BatchesWithinWindowAddsHeartbeatsAndEndsSession) {
  ScratchDir dir;
  const std::string path = dir.file("p.pcap");
  {
    net::PcapWriter w(path, net::kLinkEthernet);
    PacketizerConfig pc;
    pc.max_messages_per_packet = 3;
    pc.batch_window_ns = 1000;
    pc.heartbeat_interval_ns = 1000000;  // 1 ms
    MoldPacketizer p(w, pc);
    uint8_t msg[12] = {'S'};
    for (uint64_t ts : {0, 100, 200, 300, 5000, 3500000}) p.add(msg, 12, ts);
    p.finish(true);
    // [0,100,200] [300] [5000] hb hb hb? (idle 5000 -> 3500000: heartbeats at 1.005, 2.005, 3.005 ms) [3500000] eos
    EXPECT_EQ(p.stats().message_packets, 4u);
    EXPECT_EQ(p.stats().heartbeats, 3u);
    EXPECT_EQ(p.stats().end_of_session, 1u);
    EXPECT_EQ(p.stats().next_sequence, 7u);
    w.commit();
  }
  CaptureReader r(path);
  MoldFramer framer;
  std::vector<uint64_t> seqs;
  ASSERT_TRUE(r.run([&](uint64_t, const uint8_t* d, size_t n) {
    framer.on_datagram(d, n, [&](uint64_t seq, const uint8_t*, size_t) { seqs.push_back(seq); });
  }, [](uint64_t, const uint8_t*, size_t) {}));
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(framer.counters().heartbeats, 3u);
  EXPECT_EQ(framer.counters().end_of_session, 1u);
  EXPECT_EQ(framer.sequence().counters().gap_events, 0u);
}

TEST(Itch2Pcap, ItchFileAndPcapCarryTheSameMessages) {
  ScratchDir dir;
  const auto msgs = generate(small_day(4, 3000));
  {
    ItchFileWriter w(dir.file("s.itch"));
    for (const Message& m : msgs) w.write(m.bytes.data(), uint16_t(m.bytes.size()));
    w.commit();
  }
  CaptureReader itch_reader(dir.file("s.itch"));
  EXPECT_EQ(itch_reader.kind(), CaptureKind::kItchFile);
  std::vector<std::vector<uint8_t>> from_file;
  ASSERT_TRUE(itch_reader.run([](uint64_t, const uint8_t*, size_t) {},
                              [&](uint64_t, const uint8_t* m, size_t n) { from_file.emplace_back(m, m + n); }));
  ASSERT_EQ(from_file.size(), msgs.size());
  for (size_t i = 0; i < msgs.size(); ++i) ASSERT_EQ(from_file[i], msgs[i].bytes) << i;
}

TEST(Dates, CivilDatesAndTimesOfDay) {
  EXPECT_EQ(epoch_ns_of_date("1970-01-01"), 0u);
  EXPECT_EQ(epoch_ns_of_date("2024-01-02"), 1704153600ull * 1000000000ull);
  EXPECT_EQ(epoch_ns_of_date("2000-03-01"), 951868800ull * 1000000000ull);
  EXPECT_THROW(epoch_ns_of_date("2024-13-01"), std::invalid_argument);
  EXPECT_THROW(epoch_ns_of_date("yesterday"), std::invalid_argument);
  EXPECT_EQ(ns_of_time_of_day("09:30:00"), 34200000000000ull);
  EXPECT_EQ(ns_of_time_of_day("00:00:01.5"), 1500000000ull);
  EXPECT_THROW(ns_of_time_of_day("25:00:00"), std::invalid_argument);
  EXPECT_THROW(ns_of_time_of_day("09:30:00x"), std::invalid_argument);
}
