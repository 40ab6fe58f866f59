// The recovery stage on a real handler's cases (MoldUDP64: a request asks for
// `count` messages from `sequence`; heartbeats and ends of session carry the
// next sequence). Packets go through a real MoldFramer behind the stage; each
// message carries its own sequence number, so what is applied is checked
// against the sequence order the spec demands, not against the stage.
#include <gtest/gtest.h>

#include <vector>

#include "pipeline/gap_recovery.hpp"
#include "pipeline/mold_framer.hpp"
#include "protocol/endian.hpp"

using namespace itchbench;

namespace {

uint64_t g_now = 1'000'000'000;
uint64_t fake_clock() { return g_now; }

std::vector<uint8_t> packet(uint64_t first, uint16_t count) {
  std::vector<uint8_t> buf(2048);
  mold::PacketBuilder b(buf.data(), buf.size());
  b.start(mold::make_session("TEST000001"), first);
  for (uint16_t i = 0; i < count; ++i) {
    uint8_t msg[8];
    store_be64(msg, first + i);
    EXPECT_TRUE(b.add(msg, sizeof msg));
  }
  buf.resize(b.finish_messages());
  return buf;
}

std::vector<uint8_t> control(uint64_t next, bool end_of_session) {
  std::vector<uint8_t> buf(64);
  mold::PacketBuilder b(buf.data(), buf.size());
  b.start(mold::make_session("TEST000001"), next);
  buf.resize(end_of_session ? b.finish_end_of_session() : b.finish_heartbeat());
  return buf;
}

struct Sink {
  MoldFramer framer;
  std::vector<uint64_t> applied;
  std::vector<mold::Request> requests;
  size_t malformed_packets = 0;
  void packet(const mold::Packet& p, const logfmt::Arrival&) {
    framer.on_packet(
        p,
        [&](uint64_t seq, const uint8_t* m, size_t n) {
          ASSERT_EQ(n, 8u);
          EXPECT_EQ(load_be64(m), seq);  // the bytes of the message the sequence names
          applied.push_back(seq);
        },
        [](const uint8_t*, size_t) {});
  }
  void malformed(const uint8_t*, size_t, const logfmt::Arrival&) { ++malformed_packets; }
  bool request(const mold::Request& r) {
    requests.push_back(r);
    return true;
  }
};

std::vector<uint64_t> range(uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> v;
  for (uint64_t s = lo; s < hi; ++s) v.push_back(s);
  return v;
}

struct Fixture {
  explicit Fixture(RecoveryOptions o) : stage((o.clock_ns = &fake_clock, o)) {}
  void send(const std::vector<uint8_t>& p, Line line) { stage.on_datagram(p.data(), p.size(), line, {}, sink); }
  void wait(uint64_t ns) {
    g_now += ns;
    stage.poll(stage.now_ns(), sink);
  }
  GapRecovery stage;
  Sink sink;
};

RecoveryOptions lines_only() {
  RecoveryOptions o;
  o.line_b = true;
  return o;
}
RecoveryOptions server_only(uint32_t max_requests = 8) {
  RecoveryOptions o;
  o.server = true;
  o.max_requests = max_requests;
  return o;
}

}  // namespace

TEST(GapRecovery, FirstCopyWinsAndTheOtherLinesAreCountedAsDuplicates) {
  Fixture f(lines_only());
  f.send(packet(1, 2), Line::kA);
  f.send(packet(1, 2), Line::kB);
  f.send(packet(3, 1), Line::kA);
  f.send(packet(3, 1), Line::kB);
  EXPECT_EQ(f.sink.applied, range(1, 4));
  EXPECT_EQ(f.stage.counters().duplicate_packets, 2u);
  EXPECT_EQ(f.stage.counters().duplicate_messages, 3u);
  EXPECT_EQ(f.stage.counters().messages_first[0], 3u);
  EXPECT_EQ(f.stage.counters().gaps, 0u);
}

TEST(GapRecovery, APacketLostOnALineIsFilledByTheOtherInOrder) {
  Fixture f(lines_only());
  f.send(packet(1, 1), Line::kA);
  f.send(packet(3, 1), Line::kA);  // 2 lost on A: 3 waits
  EXPECT_EQ(f.sink.applied, range(1, 2));
  EXPECT_EQ(f.stage.held(), 1u);
  f.send(packet(1, 1), Line::kB);
  f.send(packet(2, 1), Line::kB);  // fills the gap: 2 then the held 3
  f.send(packet(4, 1), Line::kA);
  f.send(packet(3, 1), Line::kB);
  f.send(packet(4, 1), Line::kB);
  EXPECT_EQ(f.sink.applied, range(1, 5));
  const RecoveryCounters& c = f.stage.counters();
  EXPECT_EQ(c.messages_first[size_t(Line::kB)], 1u);
  EXPECT_EQ(c.gaps, 1u);
  EXPECT_EQ(c.gaps_filled, 1u);
  EXPECT_EQ(c.held_packets, 1u);
  EXPECT_EQ(f.sink.framer.sequence().counters().gap_messages, 0u);
  EXPECT_TRUE(f.sink.requests.empty());
}

TEST(GapRecovery, BAheadOfAIsTheFirstCopy) {
  Fixture f(lines_only());
  for (uint64_t s = 1; s <= 4; ++s) {
    f.send(packet(s, 1), Line::kB);
    f.send(packet(s, 1), Line::kA);
  }
  EXPECT_EQ(f.sink.applied, range(1, 5));
  EXPECT_EQ(f.stage.counters().messages_first[size_t(Line::kB)], 4u);
  EXPECT_EQ(f.stage.counters().duplicate_messages, 4u);
}

TEST(GapRecovery, ALineDeadForAWhileLosesNothingWhileTheOtherCarries) {
  Fixture f(lines_only());
  f.send(packet(1, 1), Line::kA);
  for (uint64_t s = 1; s <= 50; ++s) f.send(packet(s, 1), Line::kB);  // A silent
  f.wait(1'000'000'000);
  f.send(packet(51, 1), Line::kA);
  EXPECT_EQ(f.sink.applied, range(1, 52));
  EXPECT_EQ(f.stage.counters().gaps, 0u);
  EXPECT_EQ(f.stage.counters().messages_given_up, 0u);
}

TEST(GapRecovery, AGapIsFilledByOneRequest) {
  Fixture f(server_only());
  f.send(packet(1, 1), Line::kA);
  f.send(packet(4, 2), Line::kA);  // 2 and 3 lost: asked for at once (no other line to wait for)
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].sequence, 2u);
  EXPECT_EQ(f.sink.requests[0].count, 2u);
  EXPECT_EQ(std::string(f.sink.requests[0].session.data(), 10), "TEST000001");
  f.send(packet(2, 2), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(1, 6));
  EXPECT_EQ(f.stage.counters().messages_first[size_t(Line::kAnswer)], 2u);
  EXPECT_EQ(f.stage.counters().gaps_filled, 1u);
  EXPECT_FALSE(f.stage.gaps_open());
}

TEST(GapRecovery, WithABLineTheServerIsAskedOnlyAfterTheLineWait) {
  RecoveryOptions o = server_only();
  o.line_b = true;
  o.line_wait_ns = 1'000'000;
  Fixture f(o);
  f.send(packet(1, 1), Line::kA);
  f.send(packet(3, 1), Line::kA);
  f.wait(999'999);
  EXPECT_TRUE(f.sink.requests.empty());
  f.wait(1);
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].sequence, 2u);
}

TEST(GapRecovery, APartialAnswerAsksForTheRestSoonAndResetsTheLimit) {
  Fixture f(server_only(2));
  f.send(packet(1, 1), Line::kA);
  f.send(packet(7, 1), Line::kA);  // 2..6 lost
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].count, 5u);
  f.wait(GapRecovery::kAnswerPauseNs);
  f.wait(RecoveryOptions{}.request_timeout_ns);  // unanswered once: asked again (2 of 2)
  ASSERT_EQ(f.sink.requests.size(), 2u);
  f.send(packet(2, 2), Line::kAnswer);  // the server's cap: 2 of 5
  f.wait(GapRecovery::kAnswerPauseNs);
  ASSERT_EQ(f.sink.requests.size(), 3u);  // the limit counts requests that brought nothing
  EXPECT_EQ(f.sink.requests[2].sequence, 4u);
  EXPECT_EQ(f.sink.requests[2].count, 3u);
  f.send(packet(4, 2), Line::kAnswer);
  f.wait(GapRecovery::kAnswerPauseNs);
  EXPECT_EQ(f.sink.requests.back().sequence, 6u);
  f.send(packet(6, 1), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(1, 8));
  EXPECT_EQ(f.stage.counters().messages_given_up, 0u);
}

TEST(GapRecovery, AGapOnlyAHeartbeatShowsIsAskedForAndFilled) {
  Fixture f(server_only());
  f.send(packet(1, 1), Line::kA);
  f.send(control(4, false), Line::kA);  // the next is 4: 2 and 3 were lost
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].sequence, 2u);
  EXPECT_EQ(f.sink.requests[0].count, 2u);
  EXPECT_EQ(f.sink.framer.counters().heartbeats, 0u);  // held behind the gap
  f.send(packet(2, 2), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(1, 4));
  EXPECT_EQ(f.sink.framer.counters().heartbeats, 1u);
  EXPECT_EQ(f.sink.framer.sequence().counters().gap_messages, 0u);
}

TEST(GapRecovery, AGapAtTheEndOfSessionIsFilledBeforeTheEnd) {
  Fixture f(server_only());
  f.send(packet(1, 2), Line::kA);
  f.send(control(5, true), Line::kA);  // 3 and 4 lost at the end
  EXPECT_EQ(f.sink.framer.counters().end_of_session, 0u);  // the end is not the end yet
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].sequence, 3u);
  f.send(packet(3, 2), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(1, 5));
  EXPECT_EQ(f.sink.framer.counters().end_of_session, 1u);
}

TEST(GapRecovery, AnAnswerAfterTheTimeoutIsAppliedOnceAndTheSecondIsADuplicate) {
  Fixture f(server_only());
  f.send(packet(1, 1), Line::kA);
  f.send(packet(3, 1), Line::kA);
  f.wait(RecoveryOptions{}.request_timeout_ns);
  ASSERT_EQ(f.sink.requests.size(), 2u);
  EXPECT_EQ(f.stage.counters().request_retries, 1u);
  f.send(packet(2, 1), Line::kAnswer);  // the first request's, late
  f.send(packet(2, 1), Line::kAnswer);  // the second's
  EXPECT_EQ(f.sink.applied, range(1, 4));
  EXPECT_EQ(f.stage.counters().duplicate_messages, 1u);
}

TEST(GapRecovery, AGapIsGivenUpAfterItsRequestsAndTheFramerCountsItLost) {
  Fixture f(server_only(2));
  f.send(packet(1, 1), Line::kA);
  f.send(packet(4, 1), Line::kA);
  f.wait(RecoveryOptions{}.request_timeout_ns);
  EXPECT_EQ(f.sink.requests.size(), 2u);
  EXPECT_EQ(f.sink.applied, range(1, 2));
  f.wait(2 * RecoveryOptions{}.request_timeout_ns - 1);  // the second waits twice as long
  EXPECT_EQ(f.sink.applied, range(1, 2));
  f.wait(1);  // both spent: skipped
  EXPECT_EQ(f.sink.requests.size(), 2u);
  EXPECT_EQ(f.sink.applied, (std::vector<uint64_t>{1, 4}));
  EXPECT_EQ(f.stage.counters().messages_given_up, 2u);
  EXPECT_EQ(f.stage.counters().gaps_given_up, 1u);
  EXPECT_EQ(f.sink.framer.sequence().counters().gap_messages, 2u);
  f.send(packet(2, 2), Line::kAnswer);  // too late: already given up
  EXPECT_EQ(f.sink.applied, (std::vector<uint64_t>{1, 4}));
}

TEST(GapRecovery, WithoutAServerAGapTheOtherLineDoesNotFillIsGivenUpAfterTheLineWait) {
  Fixture f(lines_only());
  f.send(packet(1, 1), Line::kA);
  f.send(packet(3, 1), Line::kA);
  f.wait(RecoveryOptions{}.line_wait_ns - 1);
  EXPECT_EQ(f.sink.applied, range(1, 2));
  f.wait(1);
  EXPECT_EQ(f.sink.applied, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(f.stage.counters().messages_given_up, 1u);
  EXPECT_TRUE(f.sink.requests.empty());
}

TEST(GapRecovery, APacketPartlyObsoleteAppliesOnlyWhatIsNew) {
  Fixture f(server_only());
  f.send(packet(1, 2), Line::kA);
  f.send(packet(5, 1), Line::kA);  // 3, 4 lost
  f.send(packet(2, 3), Line::kAnswer);  // 2 again, then 3 and 4
  EXPECT_EQ(f.sink.applied, range(1, 6));
  EXPECT_EQ(f.sink.framer.sequence().counters().duplicate_messages, 1u);
}

TEST(GapRecovery, SeveralGapsAreAskedForAtOnceAndFilledInAnyOrder) {
  Fixture f(server_only());
  f.send(packet(1, 1), Line::kA);
  f.send(packet(3, 1), Line::kA);
  f.send(packet(6, 1), Line::kA);
  ASSERT_EQ(f.sink.requests.size(), 2u);
  EXPECT_EQ(f.sink.requests[1].sequence, 4u);
  EXPECT_EQ(f.sink.requests[1].count, 2u);
  f.send(packet(4, 2), Line::kAnswer);  // the later gap's answer first: held
  EXPECT_EQ(f.sink.applied, range(1, 2));
  f.send(packet(2, 1), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(1, 7));
  EXPECT_EQ(f.stage.counters().gaps_filled, 2u);
}

TEST(GapRecovery, AFullHoldGivesUpTheOldestGap) {
  RecoveryOptions o = lines_only();
  o.hold_packets = 2;
  Fixture f(o);
  f.send(packet(1, 1), Line::kA);
  f.send(packet(3, 1), Line::kA);
  f.send(packet(4, 1), Line::kA);
  f.send(packet(5, 1), Line::kA);  // no room: 2 is given up, 3 and 4 go on, 5 is in sequence
  EXPECT_EQ(f.sink.applied, (std::vector<uint64_t>{1, 3, 4, 5}));
  EXPECT_EQ(f.stage.counters().hold_full, 1u);
  EXPECT_EQ(f.stage.counters().messages_given_up, 1u);
}

TEST(GapRecovery, AMalformedPacketGoesToTheFramerToBeCountedAndMovesNothing) {
  Fixture f(lines_only());
  f.send(packet(1, 1), Line::kA);
  std::vector<uint8_t> bad = packet(2, 1);
  bad.pop_back();  // the message runs past the end
  f.send(bad, Line::kA);
  EXPECT_EQ(f.sink.malformed_packets, 1u);
  EXPECT_EQ(f.stage.expected(), 2u);
  f.send(packet(2, 1), Line::kB);  // the other line's good copy is applied
  EXPECT_EQ(f.sink.applied, range(1, 3));
}

// Seeded, many gaps at once: each line loses a tenth of its packets on its own, B runs three packets behind A,
// the server loses a quarter of its answers. Whatever the stage does, the framer must see every message at most
// once and in sequence order, and every message either applied or counted as given up.
TEST(GapRecovery, UnderRandomLossesEveryMessageIsAppliedOnceInOrderOrCountedGivenUp) {
  RecoveryOptions o = server_only(3);
  o.line_b = true;
  o.hold_packets = 64;
  Fixture f(o);
  uint64_t rng = 0x9E3779B97F4A7C15ull;  // xorshift64, seeded here
  auto chance = [&](unsigned percent) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % 100 < percent;
  };
  constexpr uint64_t kPackets = 3000;
  size_t answered = 0;
  auto answer_requests = [&] {
    for (; answered < f.sink.requests.size(); ++answered) {
      const mold::Request r = f.sink.requests[answered];
      if (!chance(25)) f.send(packet(r.sequence, uint16_t(std::min<uint64_t>(r.count, 3))), Line::kAnswer);
    }
  };
  for (uint64_t p = 1; p <= kPackets + 3; ++p) {
    if (p <= kPackets && !chance(10)) f.send(packet(2 * p - 1, 2), Line::kA);
    if (p > 3 && !chance(10)) f.send(packet(2 * (p - 3) - 1, 2), Line::kB);
    f.wait(200'000);
    answer_requests();
  }
  f.send(control(2 * kPackets + 1, true), Line::kA);
  for (int i = 0; i < 400 && f.stage.gaps_open(); ++i) {
    f.wait(5'000'000);
    answer_requests();
  }
  EXPECT_FALSE(f.stage.gaps_open());
  const std::vector<uint64_t>& a = f.sink.applied;
  for (size_t i = 1; i < a.size(); ++i) ASSERT_LT(a[i - 1], a[i]) << "at " << i;
  EXPECT_EQ(a.size() + f.stage.counters().messages_given_up, 2 * kPackets);
  EXPECT_EQ(f.sink.framer.sequence().counters().gap_messages, f.stage.counters().messages_given_up);
  EXPECT_EQ(f.sink.framer.counters().end_of_session, 1u);
  EXPECT_GT(f.stage.counters().requests, 0u);
  EXPECT_GT(f.stage.counters().messages_first[size_t(Line::kB)], 0u);
  EXPECT_GT(f.stage.counters().messages_first[size_t(Line::kAnswer)], 0u);
}

TEST(GapRecovery, APartialAnswerToALaterGapAsksForItsRestWhileAnEarlierGapIsOpen) {
  Fixture f(server_only());
  f.send(packet(1, 1), Line::kA);
  f.send(packet(3, 1), Line::kA);  // 2 lost
  f.send(packet(8, 1), Line::kA);  // 4..7 lost
  ASSERT_EQ(f.sink.requests.size(), 2u);
  f.send(packet(4, 2), Line::kAnswer);  // half of the later gap, held behind 2
  f.wait(GapRecovery::kAnswerPauseNs);
  ASSERT_EQ(f.sink.requests.size(), 3u);
  EXPECT_EQ(f.sink.requests[2].sequence, 6u);
  EXPECT_EQ(f.sink.requests[2].count, 2u);
  f.send(packet(2, 1), Line::kAnswer);
  f.send(packet(6, 2), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(1, 9));
}

// A late join (docs/snapshot.md): the live feed is held while the snapshot comes; its number (the next message to
// apply) decides what is dropped as covered and what is asked for.
TEST(GapRecovery, AJoinHoldsTheFeedThenStartsAtTheSnapshotsNumber) {
  RecoveryOptions o = server_only();
  o.join = true;
  Fixture f(o);
  for (uint64_t s = 5; s <= 9; ++s) f.send(packet(s, 1), Line::kA);
  f.send(packet(5, 1), Line::kB);  // the other line's copy of a held packet
  EXPECT_TRUE(f.sink.applied.empty());
  EXPECT_EQ(f.stage.counters().join_held_packets, 5u);
  f.sink.framer.start_at(7);  // as the gateway does once the snapshot is applied
  f.stage.start_at(7, f.sink);
  EXPECT_EQ(f.sink.applied, range(7, 10));
  EXPECT_EQ(f.stage.counters().join_covered_messages, 2u);
  EXPECT_TRUE(f.sink.requests.empty());
  f.send(packet(10, 1), Line::kA);
  EXPECT_EQ(f.sink.applied, range(7, 11));
}

TEST(GapRecovery, AJoinWhoseFeedStartsPastTheSnapshotAsksForTheMessagesBetween) {
  RecoveryOptions o = server_only();
  o.join = true;
  Fixture f(o);
  f.send(packet(10, 2), Line::kA);
  f.send(packet(12, 1), Line::kA);
  f.sink.framer.start_at(7);
  f.stage.start_at(7, f.sink);
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].sequence, 7u);
  EXPECT_EQ(f.sink.requests[0].count, 3u);
  EXPECT_EQ(std::string(f.sink.requests[0].session.data(), 10), "TEST000001");
  f.send(packet(6, 4), Line::kAnswer);  // starts one before the number: that one is the snapshot's
  EXPECT_EQ(f.sink.applied, range(7, 13));
  EXPECT_EQ(f.sink.framer.sequence().counters().duplicate_messages, 1u);
}

TEST(GapRecovery, AJoinWhoseSnapshotCameFirstAsksForWhatTheFeedShowsMissing) {
  RecoveryOptions o = server_only();
  o.join = true;
  Fixture f(o);
  f.sink.framer.start_at(7);
  f.stage.start_at(7, f.sink);  // nothing held yet
  f.send(packet(9, 1), Line::kA);
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].sequence, 7u);
  f.send(packet(7, 2), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(7, 10));
}

TEST(GapRecovery, AJoinWhoseHoldFillsDropsTheOldestAndAsksForItLater) {
  RecoveryOptions o = server_only();
  o.join = true;
  o.hold_packets = 3;
  Fixture f(o);
  for (uint64_t s = 5; s <= 9; ++s) f.send(packet(s, 1), Line::kA);  // 5 and 6 pushed out
  EXPECT_EQ(f.stage.counters().join_dropped_packets, 2u);
  f.sink.framer.start_at(5);
  f.stage.start_at(5, f.sink);
  ASSERT_EQ(f.sink.requests.size(), 1u);
  EXPECT_EQ(f.sink.requests[0].sequence, 5u);
  EXPECT_EQ(f.sink.requests[0].count, 2u);
  f.send(packet(5, 2), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(5, 10));
}

TEST(GapRecovery, PacketsLostWhileJoiningAreAskedForOnceJoined) {
  RecoveryOptions o = server_only();
  o.join = true;
  Fixture f(o);
  for (uint64_t s : {5, 6, 8, 9, 12}) f.send(packet(s, 1), Line::kA);  // 7, 10 and 11 lost while the snapshot came
  f.sink.framer.start_at(6);
  f.stage.start_at(6, f.sink);
  EXPECT_EQ(f.sink.applied, range(6, 7));
  ASSERT_EQ(f.sink.requests.size(), 2u);
  EXPECT_EQ(f.sink.requests[0].sequence, 7u);
  EXPECT_EQ(f.sink.requests[0].count, 1u);
  EXPECT_EQ(f.sink.requests[1].sequence, 10u);
  EXPECT_EQ(f.sink.requests[1].count, 2u);
  f.send(packet(10, 2), Line::kAnswer);
  f.send(packet(7, 1), Line::kAnswer);
  EXPECT_EQ(f.sink.applied, range(6, 13));
}
